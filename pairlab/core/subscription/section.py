"""The subscription section of a run's report: per cohort, the quota evidence per arm,
the paired effects per window and the subscription verdict per contrast.

Input: the run's episode records, its quota intervals (quota-aware runs), the
cohort analysis in its JSON form (for the gate, the plan and each cohort's
paired correctness) and the provider loom's artifact names for the client.
Output: a JSON-ready dict (``report.json`` → ``subscription``), a pure function
of those inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from pairlab.core.analysis.cohorts import contrasts_of, order_arms
from pairlab.core.analysis.metrics import KEY_COLUMNS
from pairlab.core.analysis.study_plan import StudyPlan
from pairlab.core.quota.intervals import QuotaIntervalRecord
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.subscription.effects import WINDOW_METRICS, Correctness, quota_effects
from pairlab.core.subscription.evidence import precision_assessment, precision_json
from pairlab.core.subscription.units import CohortKey, run_units, units_frame
from pairlab.core.subscription.verdicts import cohort_verdicts
from pairlab.core.verdict.artifact import Provider

SECTION_SCHEMA_VERSION: Final = 1

RULE_TEXT: Final = (
    "Subscription verdict per cohort and contrast: the canary's quota rule (the one "
    "implementation `pairlab compare` uses) on the cohort's paired {unit}s, control as "
    "baseline: supported only when no interval is worse and at least one shows a reduction "
    "larger than the two precisions summed; unequal intervals, reset crossings, unrelated "
    "concurrent use and unknown precision make it inconclusive with the canary's reason "
    "codes. Effects: mean paired difference in percentage points of each window "
    "(negative = less quota), the same intervals and decision rule as the token metrics; "
    "a null consumption is excluded with its reason, never counted as 0."
)


def _correctness(analysis: Mapping[str, Any]) -> dict[tuple[CohortKey, str], Correctness]:
    """(cohort key, contrast label) -> paired correctness, from the analysis JSON: graded
    pairs exist (a McNemar p) and the treatment's rate is not below the control's."""
    found = {}
    for cohort in analysis.get("cohorts", []):
        key = tuple(str(cohort["key"][k]) for k in KEY_COLUMNS)
        for paired in cohort.get("correctness", {}).get("paired", []):
            graded = paired.get("mcnemarP") is not None
            diff = paired.get("diff")
            label = f"{paired['treatment']}-vs-{paired['control']}"
            found[(key, label)] = Correctness(
                holds=graded and diff is not None and diff >= 0, graded=graded
            )
    return found


def _arms_by_key(rows: list[dict[str, Any]]) -> dict[CohortKey, list[dict[str, Any]]]:
    out: dict[CohortKey, list[dict[str, Any]]] = {}
    for row in rows:
        key = tuple(str(row.pop(k)) for k in KEY_COLUMNS)
        row.pop("unit", None)
        out.setdefault(key, []).append(row)
    return out


def _below(arms: list[dict[str, Any]], arm: str, window: str) -> bool | None:
    for row in arms:
        if row["arm"] == arm and row["window"] == window:
            return row["belowPrecision"]  # type: ignore[no-any-return]
    return None


def analyse_subscription(
    records: Sequence[EpisodeRecord],
    intervals: Sequence[QuotaIntervalRecord],
    analysis: Mapping[str, Any],
    plan: StudyPlan,
    *,
    provider: Provider | None,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
) -> dict[str, Any]:
    unit, units = run_units(records, intervals)
    frame = units_frame(units)
    arms = order_arms(frame.filter(~frame["excluded"])["arm"].unique().to_list())
    contrasts = contrasts_of(arms)
    effects = quota_effects(
        frame,
        run_id=str(analysis.get("runId")),
        gate=int(analysis["gate"]),
        plan=plan,
        contrasts=contrasts,
        correctness=_correctness(analysis),
        n_resamples=n_resamples,
        confidence=confidence,
    )
    verdicts = cohort_verdicts(
        units, contrasts, provider, client=units[0].key[0] if units else None
    )
    arm_rows = _arms_by_key(precision_json(precision_assessment(frame, unit=unit)))
    counts: dict[CohortKey, tuple[int, int]] = {}
    for u in units:
        total, excluded = counts.get(u.key, (0, 0))
        counts[u.key] = (total + 1, excluded + int(u.excluded))
    cohorts = []
    for key in sorted(counts):
        arms_here = arm_rows.get(key, [])
        found = effects.get(key, {"status": "insufficient", "pairs": 0, "exploratory": False})
        cohort_effects = found.get("effects", [])
        for effect in cohort_effects:
            effect["belowPrecision"] = _below(arms_here, effect["control"], effect["window"])
        cohort_verdict_rows = verdicts.get(key, [])
        for verdict in cohort_verdict_rows:
            flags = [_below(arms_here, verdict["control"], w) for w, _v, _r in WINDOW_METRICS]
            verdict["belowPrecision"] = (
                None if all(f is None for f in flags) else all(f is not False for f in flags)
            )
        cohorts.append(
            {
                "key": dict(zip(KEY_COLUMNS, key, strict=True)),
                "status": found["status"],
                "pairs": found["pairs"],
                "exploratory": found["exploratory"],
                "units": counts[key][0],
                "excluded": counts[key][1],
                "arms": arms_here,
                "effects": cohort_effects,
                "verdicts": cohort_verdict_rows,
            }
        )
    return {
        "schemaVersion": SECTION_SCHEMA_VERSION,
        "unit": unit,
        "provider": None if provider is None else str(provider),
        "windows": [{"window": w, "metric": m} for w, m, _r in WINDOW_METRICS],
        "rule": RULE_TEXT.format(unit=unit),
        "cohorts": cohorts,
    }


__all__ = ["RULE_TEXT", "SECTION_SCHEMA_VERSION", "analyse_subscription"]
