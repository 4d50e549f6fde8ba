"""Claim 2, retrieval evidence: per task cohort and finding, delivered vs held out.

Holdouts are randomized per (pair, finding) by the intervention, so within a cohort the
episodes where a finding was **delivered** and those where it was eligible but **held
out** differ only by that draw. Each retrieval/full episode is paired with its own
pair's ``optimizer`` episode (same task, repetition and emulator script draws; the same
routing without retrieval): ``d = outcome(episode) − outcome(optimizer)``. The effect
of delivering a finding is ``mean(d | delivered) − mean(d | held out)``, with a
deterministic percentile-bootstrap 95 % interval (resampled within each group, seeded
by the cohort and finding names). A pair without an optimizer episode or with a null
outcome is left out and counted (``unpaired``), never imputed. Correctness is a 0/1
outcome (a difference of rates). Cohorts are (client, version, model, task, stratum):
cold and warm strata are separate cohorts and never pooled.

Alongside: harmful ratings, quarantines, and every finding that was stale when
delivered (with the episode), per cohort.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.stats.seeds import make_rng

CONTROL_ARM: Final = "optimizer"
RETRIEVAL_ARMS: Final = ("retrieval", "full")
METRICS: Final = ("apiCalls", "totalTokens", "correct")
RESAMPLES: Final = 4000
CONFIDENCE: Final = 0.95
MIN_PER_GROUP: Final = 2


def _cohort(r: EpisodeRecord) -> tuple[str, str, str, str, str]:
    return (
        r.client,
        r.client_version or "unknown",
        r.model or "unknown",
        r.task_id,
        r.stratum or "cold",
    )


def _outcome(r: EpisodeRecord, metric: str) -> float | None:
    value = {"apiCalls": r.api_calls, "totalTokens": r.total_tokens, "correct": r.correct}[metric]
    return None if value is None else float(value)


def _interval(delivered: np.ndarray, held: np.ndarray, names: Sequence[str]) -> tuple[float, float]:
    rng = make_rng("pairlab.claim2.v1", *names)
    a = rng.integers(0, delivered.size, size=(RESAMPLES, delivered.size))
    b = rng.integers(0, held.size, size=(RESAMPLES, held.size))
    diffs = delivered[a].mean(axis=1) - held[b].mean(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(diffs, [tail, 100 - tail])
    return float(low), float(high)


def _effect(delivered: list[float], held: list[float], names: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "nDelivered": len(delivered),
        "nHeldOut": len(held),
        "deliveredMeanDiff": float(np.mean(delivered)) if delivered else None,
        "heldOutMeanDiff": float(np.mean(held)) if held else None,
        "estimate": None,
        "low": None,
        "high": None,
        "excludesZero": None,
    }
    if len(delivered) < MIN_PER_GROUP or len(held) < MIN_PER_GROUP:
        out["reason"] = f"fewer than {MIN_PER_GROUP} paired episodes in a group"
        return out
    d, h = np.asarray(delivered), np.asarray(held)
    low, high = _interval(d, h, names)
    out.update(
        estimate=float(d.mean() - h.mean()),
        low=low,
        high=high,
        excludesZero=bool(low > 0 or high < 0),
    )
    return out


def retrieval_evidence(records: Sequence[EpisodeRecord]) -> dict[str, Any] | None:
    """The report's ``retrievalEvidence`` section, or None when no episode was offered a
    finding (nothing delivered or held out anywhere)."""
    kept = [r for r in records if not r.excluded]
    if not any(r.finding_ids or r.shadow_finding_ids for r in kept):
        return None
    controls = {(r.pair_id, r.stratum): r for r in kept if r.arm == CONTROL_ARM}
    by_cohort: dict[tuple[str, ...], list[EpisodeRecord]] = defaultdict(list)
    for r in kept:
        by_cohort[_cohort(r)].append(r)
    cohorts = []
    for key, episodes in sorted(by_cohort.items()):
        treated = [r for r in episodes if r.arm in RETRIEVAL_ARMS]
        findings = sorted({f for r in treated for f in (*r.finding_ids, *r.shadow_finding_ids)})
        rows = []
        for finding in findings:
            entry: dict[str, Any] = {"findingId": finding, "metrics": {}}
            unpaired = 0
            for metric in METRICS:
                groups: dict[bool, list[float]] = {True: [], False: []}
                for r in treated:
                    delivered = finding in r.finding_ids
                    if not delivered and finding not in r.shadow_finding_ids:
                        continue
                    control = controls.get((r.pair_id, r.stratum))
                    mine = _outcome(r, metric)
                    base = _outcome(control, metric) if control is not None else None
                    if mine is None or base is None:
                        unpaired += metric == METRICS[0]
                        continue
                    groups[delivered].append(mine - base)
                entry["metrics"][metric] = _effect(
                    groups[True], groups[False], [*key, finding, metric]
                )
            entry["unpaired"] = unpaired
            rows.append(entry)
        stale = [
            {"episodeId": r.episode_id, "findingIds": list(ev.get("staleDelivered", []))}
            for r in treated
            if (ev := r.finding_evidence or {}).get("staleDelivered")
        ]
        cohorts.append(
            {
                "key": dict(
                    zip(("client", "clientVersion", "model", "taskId", "stratum"), key, strict=True)
                ),
                "findings": rows,
                "harmfulRatings": sum(
                    int((r.finding_evidence or {}).get("harmfulRatings", 0)) for r in episodes
                ),
                "quarantined": sorted(
                    {q for r in episodes for q in (r.finding_evidence or {}).get("quarantined", [])}
                ),
                "staleWhenDelivered": stale,
            }
        )
    return {
        "basis": (
            "paired on each pair's optimizer episode; delivered minus held-out mean difference; "
            f"percentile bootstrap {int(CONFIDENCE * 100)}% (B={RESAMPLES}), within-group resampling"
        ),
        "controlArm": CONTROL_ARM,
        "cohorts": cohorts,
    }


def _cell(effect: Mapping[str, Any]) -> str:
    if effect.get("estimate") is None:
        return f"n/a ({effect['nDelivered']} vs {effect['nHeldOut']})"
    mark = " *" if effect["excludesZero"] else ""
    return (
        f"{effect['estimate']:+.2f} [{effect['low']:+.2f}, {effect['high']:+.2f}]{mark} "
        f"({effect['nDelivered']} vs {effect['nHeldOut']})"
    )


def render_retrieval_markdown(section: Mapping[str, Any] | None) -> list[str]:
    if not section:
        return []
    lines = [
        "## Retrieval evidence (claim 2): delivered vs held-out findings",
        "",
        f"Effect of delivering a finding ({section['basis']}); * = the interval excludes zero. "
        "Negative apiCalls/totalTokens = fewer turns/tokens when delivered.",
        "",
        "| cohort | finding | apiCalls | totalTokens | correct |",
        "| --- | --- | --- | --- | --- |",
    ]
    for cohort in section["cohorts"]:
        k = cohort["key"]
        name = f"{k['client']} {k['clientVersion']} {k['model']} {k['taskId']} ({k['stratum']})"
        for row in cohort["findings"]:
            cells = " | ".join(_cell(row["metrics"][m]) for m in METRICS)
            lines.append(f"| {name} | {row['findingId']} | {cells} |")
    lines.append("")
    for cohort in section["cohorts"]:
        k = cohort["key"]
        stale = ", ".join(
            f"{s['episodeId']}: {', '.join(s['findingIds'])}" for s in cohort["staleWhenDelivered"]
        )
        lines.append(
            f"- {k['taskId']} ({k['stratum']}): harmful ratings {cohort['harmfulRatings']}; "
            f"quarantined {', '.join(cohort['quarantined']) or 'none'}; "
            f"stale when delivered: {stale or 'none'}"
        )
    lines.append("")
    return lines
