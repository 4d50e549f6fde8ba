"""The subscription verdict from quota intervals, never from token weights or prices.

One implementation, used by ``pairlab compare`` (per pair) and by the per-cohort
subscription verdict of evidence evals (:mod:`pairlab.core.subscription`):

    judge_intervals([(baseline_obs, candidate_obs), ...]) -> SubscriptionJudgement
    judge_subscription(baseline_observations, candidate_observations) -> SubscriptionJudgement
    judge_pooled([(baseline_observations, candidate_observations), ...]) -> SubscriptionJudgement

``judge_subscription`` is the whole rule for two runs: no observations on a
side (absent, null or empty) → ``missing-quota-telemetry``; different
(provider, window) sets → ``missing-quota-window``; otherwise the shared
intervals go to ``judge_intervals``. Each interval (:func:`compare_interval`)
is stopped by the first rule it fails, in loom's order:

1. different durations (end − start)                 ``quota-interval-mismatch``
2. different reset_id or resets_at, a continuity other
   than ``same-reset``, or an end at/after the reset  ``quota-reset-crossing``
3. unrelated concurrent use not explicitly false      ``unrelated-concurrent-quota-use``
4. an unknown precision                               ``unknown-quota-precision``
5. a negative consumption (end − start)               ``same-reset-utilization-decrease``
6. with U = the two precisions summed: candidate − baseline > U is a
   ``subscription-consumption-regression`` (rejected); baseline − candidate > U
   a reduction; otherwise ``quota-change-within-uncertainty``.

Every interval is evaluated and all reasons kept; any regression rejects.
Supported needs, in the seed's words, "no worse observed consumption in any
interval, and a reduction larger than combined measurement uncertainty in at
least one interval": an interval within the uncertainty whose candidate did not
consume more than its baseline does not block support when another interval
shows a reduction (loom requires a reduction in every interval; this is the
documented departure, docs/compare-artifact.md). Arithmetic is decimal on the
values as written, so a difference exactly equal to U is never "larger".

``judge_pooled`` is that verdict over several pairs of runs at once (a cohort's
quota pairs): every shared interval of every pair goes to ``judge_intervals``
together, so one supported verdict needs no worse interval anywhere and a
reduction in at least one; a pair whose telemetry or windows are missing
(``judge_subscription``'s own first two rules) adds its finding and keeps the
verdict from being supported. ``pairlab compare`` instead aggregates per-pair
verdicts (every pair must be supported); both agree on every interval's
comparison and on every single pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from pairlab.core.schemas.quota import Continuity
from pairlab.core.verdict.artifact import Provider, QuotaKey, QuotaObservation, QuotaWindow
from pairlab.core.verdict.outcome import Assessment, Finding, Verdict
from pairlab.core.verdict.reasons import VerdictReason

R = VerdictReason


class IntervalOutcome(StrEnum):
    REDUCTION = "reduction"
    REGRESSION = "regression"
    WITHIN_UNCERTAINTY = "within-uncertainty"  # the candidate did not consume more
    INCREASE_WITHIN_UNCERTAINTY = "increase-within-uncertainty"
    NOT_EVALUABLE = "not-evaluable"


@dataclass(frozen=True)
class IntervalComparison:
    """One (provider, window) interval of a pair, judged; ``to_json`` is loom's evidence."""

    key: QuotaKey
    outcome: IntervalOutcome
    reason: VerdictReason | None
    detail: str
    baseline_consumption: Decimal | None  # None when negative (a decrease within the interval)
    candidate_consumption: Decimal | None
    uncertainty: Decimal | None  # None when a precision is unknown

    def to_json(self) -> dict[str, object]:
        def number(value: Decimal | None) -> float | None:
            return None if value is None else float(value)

        return {
            "provider": str(self.key[0]),
            "window": str(self.key[1]),
            "baseline_consumption_percent": number(self.baseline_consumption),
            "candidate_consumption_percent": number(self.candidate_consumption),
            "combined_uncertainty_percent": number(self.uncertainty),
        }


@dataclass(frozen=True)
class SubscriptionJudgement:
    """The subscription verdict, its findings and every interval compared."""

    verdict: Verdict
    findings: tuple[Finding, ...]
    comparisons: tuple[IntervalComparison, ...]

    @property
    def reasons(self) -> frozenset[VerdictReason]:
        return frozenset(f.reason for f in self.findings)

    @property
    def assessment(self) -> Assessment:
        checked = "no interval is worse and at least one fell beyond the uncertainty: " + "; ".join(
            c.detail for c in self.comparisons
        )
        return Assessment(self.verdict, self.findings, checked)


def _exact(value: float) -> Decimal:
    return Decimal(repr(value))


def _consumption(q: QuotaObservation) -> Decimal | None:
    used = _exact(q.used_percent_end) - _exact(q.used_percent_start)
    return used if used >= 0 else None


def _uncertainty(base: QuotaObservation, cand: QuotaObservation) -> Decimal | None:
    if base.precision_percent is None or cand.precision_percent is None:
        return None
    return _exact(base.precision_percent) + _exact(cand.precision_percent)


def _label(key: QuotaKey) -> str:
    return f"{key[0]} {key[1]}"


def _crossing(base: QuotaObservation, cand: QuotaObservation) -> str | None:
    if base.reset_id != cand.reset_id or base.resets_at != cand.resets_at:
        return "the two runs were measured against different resets"
    if base.continuity is not Continuity.SAME_RESET or cand.continuity is not Continuity.SAME_RESET:
        return (
            f"continuity is {base.continuity} / {cand.continuity}, not same-reset from end to end"
        )
    if base.observed_end_at >= base.resets_at or cand.observed_end_at >= cand.resets_at:
        return "an interval ends at or after the reset"
    return None


def _stopped(base: QuotaObservation, cand: QuotaObservation) -> tuple[VerdictReason, str] | None:
    """The first rule (1-5) that stops this interval, with what it saw."""
    if base.duration_s != cand.duration_s:
        return R.QUOTA_INTERVAL_MISMATCH, (
            f"the intervals last {base.duration_s} s and {cand.duration_s} s"
        )
    crossing = _crossing(base, cand)
    if crossing is not None:
        return R.QUOTA_RESET_CROSSING, crossing
    if base.unrelated_concurrent_use is not False or cand.unrelated_concurrent_use is not False:
        return R.UNRELATED_CONCURRENT_QUOTA_USE, (
            "unrelated concurrent use of the account was not ruled out "
            f"({base.unrelated_concurrent_use} / {cand.unrelated_concurrent_use})"
        )
    if _uncertainty(base, cand) is None:
        return R.UNKNOWN_QUOTA_PRECISION, "the precision of a reading is unknown"
    if _consumption(base) is None or _consumption(cand) is None:
        return R.SAME_RESET_UTILIZATION_DECREASE, "usage fell within one reset interval"
    return None


def compare_interval(base: QuotaObservation, cand: QuotaObservation) -> IntervalComparison:
    """One shared (provider, window) interval: the first rule that decides it."""
    if base.key != cand.key:
        raise ValueError(f"intervals of different windows: {base.key} and {cand.key}")
    numbers = (_consumption(base), _consumption(cand), _uncertainty(base, cand))
    stopped = _stopped(base, cand)
    label = _label(base.key)
    if stopped is not None:
        reason, why = stopped
        return IntervalComparison(
            base.key, IntervalOutcome.NOT_EVALUABLE, reason, f"{label}: {why}", *numbers
        )
    used_base, used_cand, u = numbers
    assert used_base is not None and used_cand is not None and u is not None
    seen = f"{label}: baseline used {used_base}, candidate {used_cand} points (±{u} combined)"
    if used_cand - used_base > u:
        return IntervalComparison(
            base.key,
            IntervalOutcome.REGRESSION,
            R.SUBSCRIPTION_CONSUMPTION_REGRESSION,
            f"{seen}: the candidate consumed more, beyond the uncertainty",
            *numbers,
        )
    if used_base - used_cand > u:
        return IntervalComparison(
            base.key, IntervalOutcome.REDUCTION, None, f"{seen}: a reduction", *numbers
        )
    if used_cand > used_base:
        outcome, how = IntervalOutcome.INCREASE_WITHIN_UNCERTAINTY, "an increase"
    else:
        outcome, how = IntervalOutcome.WITHIN_UNCERTAINTY, "no increase, but no reduction"
    return IntervalComparison(
        base.key,
        outcome,
        R.QUOTA_CHANGE_WITHIN_UNCERTAINTY,
        f"{seen}: {how} beyond the uncertainty",
        *numbers,
    )


def _decide(comparisons: Sequence[IntervalComparison]) -> Verdict:
    outcomes = {c.outcome for c in comparisons}
    if IntervalOutcome.REGRESSION in outcomes:
        return Verdict.REJECTED
    if outcomes & {IntervalOutcome.NOT_EVALUABLE, IntervalOutcome.INCREASE_WITHIN_UNCERTAINTY}:
        return Verdict.INCONCLUSIVE
    if IntervalOutcome.REDUCTION in outcomes:
        return Verdict.SUPPORTED  # the seed's "at least one interval" (loom: every interval)
    return Verdict.INCONCLUSIVE


def judge_intervals(
    intervals: Sequence[tuple[QuotaObservation, QuotaObservation]],
) -> SubscriptionJudgement:
    """Judge paired (baseline, candidate) intervals, each pair of one (provider, window).

    Pure; raises ValueError only when a pair mixes two windows (a caller's bug).
    No intervals at all is ``missing-quota-telemetry``.
    """
    if not intervals:
        finding = Finding(R.MISSING_QUOTA_TELEMETRY, "no quota intervals to compare")
        return SubscriptionJudgement(Verdict.INCONCLUSIVE, (finding,), ())
    comparisons = tuple(compare_interval(b, c) for b, c in intervals)
    verdict = _decide(comparisons)
    findings = tuple(
        Finding(c.reason, c.detail)
        for c in comparisons
        if c.reason is not None
        and not (verdict is Verdict.SUPPORTED and c.outcome is IntervalOutcome.WITHIN_UNCERTAINTY)
    )
    return SubscriptionJudgement(verdict, findings, comparisons)


def _by_key(
    observations: Sequence[QuotaObservation] | None,
) -> dict[QuotaKey, QuotaObservation] | None:
    """loom's observation map: None when absent, empty or naming a window twice."""
    if not observations:
        return None
    mapped = {q.key: q for q in observations}
    return mapped if len(mapped) == len(observations) else None


def _sort_key(key: QuotaKey) -> tuple[int, int]:
    return (list(Provider).index(key[0]), list(QuotaWindow).index(key[1]))


def shared_intervals(
    baseline: Sequence[QuotaObservation] | None, candidate: Sequence[QuotaObservation] | None
) -> list[tuple[QuotaObservation, QuotaObservation]]:
    """The (provider, window) intervals both runs observed, in loom's order
    (claude five-hour, claude seven-day, codex five-hour, codex seven-day)."""
    base, cand = _by_key(baseline), _by_key(candidate)
    if base is None or cand is None:
        return []
    return [(base[k], cand[k]) for k in sorted(base.keys() & cand.keys(), key=_sort_key)]


def quota_evidence(
    baseline: Sequence[QuotaObservation] | None, candidate: Sequence[QuotaObservation] | None
) -> tuple[IntervalComparison, ...]:
    """Every shared interval compared (the report's ``quota_comparisons``), judged or not."""
    return tuple(compare_interval(b, c) for b, c in shared_intervals(baseline, candidate))


def judge_subscription(
    baseline: Sequence[QuotaObservation] | None, candidate: Sequence[QuotaObservation] | None
) -> SubscriptionJudgement:
    """The subscription verdict of two runs from their quota observations."""
    base, cand = _by_key(baseline), _by_key(candidate)
    if base is None or cand is None:
        side = "baseline" if base is None else "candidate"
        finding = Finding(R.MISSING_QUOTA_TELEMETRY, f"the {side} has no quota observations")
        return SubscriptionJudgement(Verdict.INCONCLUSIVE, (finding,), ())
    if base.keys() != cand.keys():
        only = sorted(base.keys() ^ cand.keys(), key=_sort_key)
        finding = Finding(
            R.MISSING_QUOTA_WINDOW,
            f"only one run observed {', '.join(_label(k) for k in only)}",
        )
        return SubscriptionJudgement(
            Verdict.INCONCLUSIVE, (finding,), quota_evidence(baseline, candidate)
        )
    return judge_intervals(shared_intervals(baseline, candidate))


_MISSING = frozenset((R.MISSING_QUOTA_TELEMETRY, R.MISSING_QUOTA_WINDOW))


def judge_pooled(
    pairs: Sequence[tuple[Sequence[QuotaObservation] | None, Sequence[QuotaObservation] | None]],
) -> SubscriptionJudgement:
    """The subscription verdict of several pairs' (baseline, candidate) observations
    pooled: their shared intervals judged together by :func:`judge_intervals`, each
    pair's missing telemetry or window (as :func:`judge_subscription` finds it) kept
    as a finding that makes the verdict at best inconclusive. No pair at all is
    ``missing-quota-telemetry``."""
    shared: list[tuple[QuotaObservation, QuotaObservation]] = []
    missing: list[Finding] = []
    for baseline, candidate in pairs:
        shared += shared_intervals(baseline, candidate)
        alone = judge_subscription(baseline, candidate)
        missing += [f for f in alone.findings if f.reason in _MISSING]
    if not shared:
        if not missing:
            return judge_intervals([])
        return SubscriptionJudgement(Verdict.INCONCLUSIVE, tuple(missing), ())
    judged = judge_intervals(shared)
    if not missing:
        return judged
    return SubscriptionJudgement(
        judged.verdict.worse(Verdict.INCONCLUSIVE),
        (*judged.findings, *missing),
        judged.comparisons,
    )
