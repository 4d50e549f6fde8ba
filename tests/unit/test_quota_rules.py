"""The subscription rules as a public function (pairlab/core/verdict/quota.py).

``judge_intervals`` takes paired (baseline, candidate) intervals and is the one
implementation of the quota rules: ``pairlab compare`` reaches it through
``judge_subscription`` for every comparable pair, and any other caller (the
per-cohort verdict of evidence evals) can give it intervals directly, several
per window if it has them.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pairlab.core.schemas.quota import QuotaObservation as Snapshot
from pairlab.core.subscription.units import QuotaUnit
from pairlab.core.subscription.verdicts import unit_observations
from pairlab.core.verdict import (
    judge_artifact_bytes,
    judge_intervals,
    judge_pooled,
    judge_subscription,
)
from pairlab.core.verdict.artifact import Provider, QuotaObservation
from pairlab.core.verdict.quota import IntervalOutcome, compare_interval, shared_intervals

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "compare"


def obs(
    window: str = "five-hour", used: tuple[float, float] = (10.0, 14.0), **kw: Any
) -> QuotaObservation:
    fields: dict[str, Any] = {
        "provider": "claude",
        "window": window,
        "reset_id": f"r-{window}",
        "resets_at": 10_000,
        "observed_start_at": 1_000,
        "observed_end_at": 1_300,
        "used_percent_start": used[0],
        "used_percent_end": used[1],
        "precision_percent": 0.5,
        "unrelated_concurrent_use": False,
        "continuity": "same-reset",
    }
    return QuotaObservation.model_validate(fields | kw)


def test_no_intervals_is_missing_telemetry() -> None:
    judgement = judge_intervals([])
    assert (judgement.verdict, sorted(judgement.reasons)) == (
        "inconclusive",
        ["missing-quota-telemetry"],
    )


def test_a_pair_of_two_windows_is_a_callers_bug() -> None:
    with pytest.raises(ValueError):
        judge_intervals([(obs("five-hour"), obs("seven-day"))])


@pytest.mark.parametrize(
    ("candidate", "verdict", "reasons", "outcome"),
    [
        (obs(used=(20.0, 22.0)), "supported-candidate", [], IntervalOutcome.REDUCTION),
        (obs(used=(20.0, 25.5)), "rejected", ["subscription-consumption-regression"], IntervalOutcome.REGRESSION),
        (obs(used=(20.0, 25.0)), "inconclusive", ["quota-change-within-uncertainty"], IntervalOutcome.INCREASE_WITHIN_UNCERTAINTY),
        (obs(used=(20.0, 23.0)), "inconclusive", ["quota-change-within-uncertainty"], IntervalOutcome.WITHIN_UNCERTAINTY),
        (obs(observed_end_at=1_301), "inconclusive", ["quota-interval-mismatch"], IntervalOutcome.NOT_EVALUABLE),
        (obs(reset_id="other"), "inconclusive", ["quota-reset-crossing"], IntervalOutcome.NOT_EVALUABLE),
        (obs(unrelated_concurrent_use=None), "inconclusive", ["unrelated-concurrent-quota-use"], IntervalOutcome.NOT_EVALUABLE),
        (obs(precision_percent=None), "inconclusive", ["unknown-quota-precision"], IntervalOutcome.NOT_EVALUABLE),
        (obs(used=(20.0, 19.0)), "inconclusive", ["same-reset-utilization-decrease"], IntervalOutcome.NOT_EVALUABLE),
    ],
    ids=["reduction", "regression", "increase-within", "no-increase-within", "durations",
         "reset", "concurrent-use", "precision", "decrease"],
)  # fmt: skip
def test_each_rule_on_one_interval(
    candidate: QuotaObservation, verdict: str, reasons: list[str], outcome: IntervalOutcome
) -> None:
    judgement = judge_intervals([(obs(), candidate)])
    assert (judgement.verdict, sorted(judgement.reasons)) == (verdict, reasons)
    assert [c.outcome for c in judgement.comparisons] == [outcome]


def test_first_failing_rule_decides_an_interval() -> None:
    both = obs(observed_end_at=1_301, precision_percent=None, reset_id="other")
    assert compare_interval(obs(), both).reason == "quota-interval-mismatch"


def test_several_intervals_per_window_as_a_cohort_would_give_them() -> None:
    reduced = (obs(), obs(used=(20.0, 21.0)))
    flat = (obs(used=(30.0, 31.0)), obs(used=(40.0, 41.0)))
    assert judge_intervals([reduced, flat, reduced]).verdict == "supported-candidate"
    up = (obs(used=(30.0, 31.0)), obs(used=(40.0, 41.5)))
    assert judge_intervals([reduced, up]).verdict == "inconclusive"
    worse = (obs(used=(30.0, 31.0)), obs(used=(40.0, 43.0)))
    judgement = judge_intervals([reduced, worse, (obs(), obs(continuity="reset"))])
    assert judgement.verdict == "rejected"
    assert sorted(judgement.reasons) == [
        "quota-reset-crossing",
        "subscription-consumption-regression",
    ]


def test_two_runs_missing_telemetry_or_windows() -> None:
    assert judge_subscription(None, [obs()]).reasons == {"missing-quota-telemetry"}
    assert judge_subscription([], [obs()]).reasons == {"missing-quota-telemetry"}
    assert judge_subscription([obs(), obs("seven-day")], [obs()]).reasons == {
        "missing-quota-window"
    }


def test_intervals_from_pairlab_snapshots() -> None:
    """A caller holding pairlab's before/after snapshots (an evidence-eval episode pair):
    the per-cohort verdict's own path (``unit_observations``) into ``judge_intervals``."""

    def snap(at: int, used: float) -> Snapshot:
        return Snapshot(
            provider="sim",
            window="five-hour",
            used_percent=used,
            precision_percent=1.0,
            resets_at=datetime.fromtimestamp(50_000, UTC),
            reset_id="five-hour-1",
            observed_at=datetime.fromtimestamp(at, UTC),
            source="sim:quota.json",
        )

    def intervals(start: Snapshot, end: Snapshot) -> list[QuotaObservation] | None:
        unit = QuotaUnit(
            key=("sim",) * 6,
            arm="baseline",
            pair_id="p-1",
            unit_id="e-1",
            excluded=False,
            start=[start],
            end=[end],
            unrelated_concurrent_use=False,
            columns={},
        )
        return unit_observations(unit, Provider.CLAUDE)

    base = intervals(snap(1_000, 10.0), snap(1_060, 17.0))
    cand = intervals(snap(2_000, 17.0), snap(2_060, 20.0))
    assert base is not None and cand is not None and len(base) == len(cand) == 1
    assert judge_intervals([(base[0], cand[0])]).verdict == "supported-candidate"
    assert intervals(snap(1_000, 10.0), snap(1_000, 11.0)) is None


def test_the_engine_judges_subscription_with_the_same_function() -> None:
    """Both paths give the same answer on the same intervals (the golden two-provider
    artifact and edits of it)."""
    doc = json.loads((GOLDEN / "supported-two-providers.json").read_text())
    for used_end in (32.0, 32.5, 35.0):
        edited = copy.deepcopy(doc)
        edited["pairs"][0]["candidate"]["quota_observations"][1]["used_percent_end"] = used_end
        pair = edited["pairs"][0]
        report = judge_artifact_bytes(json.dumps(edited).encode())
        base = [QuotaObservation.model_validate(q) for q in pair["baseline"]["quota_observations"]]
        cand = [QuotaObservation.model_validate(q) for q in pair["candidate"]["quota_observations"]]
        direct = judge_intervals(shared_intervals(base, cand))
        assert report.pairs[0].subscription_verdict == direct.verdict
        assert report.pairs[0].subscription is not None
        assert report.pairs[0].subscription.reasons == direct.reasons
        assert report.pairs[0].quota_comparisons == direct.comparisons


def test_pooled_pairs_are_judged_together_by_the_same_rule() -> None:
    """A cohort's quota pairs: their intervals pooled into judge_intervals; a pair with
    missing telemetry or windows keeps the verdict from being supported."""
    reduced = ([obs()], [obs(used=(20.0, 21.0))])
    flat = ([obs(used=(30.0, 31.0))], [obs(used=(40.0, 41.0))])
    # one pair alone is exactly judge_subscription (pairlab compare's per pair)
    for pair in (reduced, flat):
        alone, pooled = judge_subscription(*pair), judge_pooled([pair])
        assert (pooled.verdict, pooled.reasons, pooled.comparisons) == (
            alone.verdict,
            alone.reasons,
            alone.comparisons,
        )
    # pooled: a reduction in one pair, nothing worse anywhere -> supported, where
    # compare's per-pair aggregation would call the flat pair inconclusive
    both = judge_pooled([reduced, flat])
    assert both.verdict == "supported-candidate" and both.reasons == frozenset()
    assert (
        both.comparisons
        == judge_intervals([(r[0][0], r[1][0]) for r in (reduced, flat)]).comparisons
    )
    assert judge_subscription(*flat).verdict == "inconclusive"
    # a pair without observations on one side: inconclusive, with the canary's code
    missing = judge_pooled([reduced, ([obs()], None)])
    assert missing.verdict == "inconclusive"
    assert missing.reasons == {"missing-quota-telemetry"}
    windows = judge_pooled([reduced, ([obs(), obs("seven-day")], [obs(used=(20.0, 21.0))])])
    assert windows.verdict == "inconclusive" and "missing-quota-window" in windows.reasons
    # a regression anywhere rejects, whatever is missing elsewhere
    worse = ([obs(used=(30.0, 31.0))], [obs(used=(40.0, 43.0))])
    assert judge_pooled([reduced, worse, ([obs()], None)]).verdict == "rejected"
    assert judge_pooled([]).reasons == {"missing-quota-telemetry"}
