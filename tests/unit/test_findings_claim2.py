"""Claim 2's delivered-vs-held-out analysis on records with known outcomes."""

from __future__ import annotations

from pairlab.core.findings.claim2 import render_retrieval_markdown, retrieval_evidence
from pairlab.core.schemas.episode import EpisodeRecord


def rec(
    rep: int,
    arm: str,
    calls: int,
    *,
    stratum: str = "cold",
    delivered: bool | None = None,
    evidence: dict[str, object] | None = None,
) -> EpisodeRecord:
    pair = f"run:{stratum}:t:{rep}"
    return EpisodeRecord(
        episode_id=f"{pair}:{arm}",
        client="claude",
        client_version="2",
        model="m",
        task_id="t",
        pair_id=pair,
        arm=arm,
        stratum=stratum,
        api_calls=calls,
        total_tokens=calls * 1000,
        correct=True,
        finding_ids=["f-a"] if delivered else [],
        shadow_finding_ids=["f-a"] if delivered is False else [],
        finding_evidence=evidence,
    )


def study(saving: int, stratum: str = "cold") -> list[EpisodeRecord]:
    out = []
    for rep in range(8):
        base = 8 + rep % 3  # pairs differ; both arms of a pair share it
        delivered = rep % 2 == 0
        out += [
            rec(rep, "optimizer", base, stratum=stratum),
            rec(
                rep,
                "retrieval",
                base + 1 - (saving if delivered else 0),
                stratum=stratum,
                delivered=delivered,
            ),
        ]
    return out


def test_a_useful_finding_has_an_interval_below_zero_a_useless_one_includes_zero() -> None:
    useful = retrieval_evidence(study(3))
    assert useful is not None
    effect = useful["cohorts"][0]["findings"][0]["metrics"]["apiCalls"]
    assert effect["estimate"] == -3.0 and effect["high"] < 0 and effect["excludesZero"]
    assert (effect["nDelivered"], effect["nHeldOut"]) == (4, 4)
    useless = retrieval_evidence(study(0))
    assert useless is not None
    none = useless["cohorts"][0]["findings"][0]["metrics"]["apiCalls"]
    assert none["estimate"] == 0.0 and none["low"] <= 0 <= none["high"] and not none["excludesZero"]


def test_cold_and_warm_are_separate_cohorts_never_pooled() -> None:
    section = retrieval_evidence([*study(3, "warm"), *study(0, "cold")])
    assert section is not None
    by_stratum = {c["key"]["stratum"]: c for c in section["cohorts"]}
    assert set(by_stratum) == {"cold", "warm"}
    warm = by_stratum["warm"]["findings"][0]["metrics"]["apiCalls"]
    cold = by_stratum["cold"]["findings"][0]["metrics"]["apiCalls"]
    assert (warm["estimate"], cold["estimate"]) == (-3.0, 0.0)  # pooled it would be -1.5
    assert warm["nDelivered"] + warm["nHeldOut"] == 8


def test_missing_control_is_counted_not_imputed_and_audit_lists_are_reported() -> None:
    records = study(3)
    records = [r for r in records if r.episode_id != "run:cold:t:0:optimizer"]
    records[-1] = records[-1].model_copy(
        update={
            "finding_evidence": {
                "staleDelivered": ["f-a"],
                "harmfulRatings": 2,
                "quarantined": ["f-a"],
            }
        }
    )
    section = retrieval_evidence(records)
    assert section is not None
    (cohort,) = section["cohorts"]
    assert cohort["findings"][0]["unpaired"] == 1
    assert cohort["findings"][0]["metrics"]["apiCalls"]["nDelivered"] == 3
    assert cohort["harmfulRatings"] == 2 and cohort["quarantined"] == ["f-a"]
    assert cohort["staleWhenDelivered"] == [
        {"episodeId": records[-1].episode_id, "findingIds": ["f-a"]}
    ]
    text = "\n".join(render_retrieval_markdown(section))
    assert "Retrieval evidence (claim 2)" in text and "quarantined f-a" in text


def test_no_finding_anywhere_means_no_section() -> None:
    assert retrieval_evidence([rec(0, "optimizer", 5), rec(0, "retrieval", 6)]) is None
