"""The subscription verdict from quota intervals (DESIGN 9), never from token weights.

Each (provider, window) interval present in both runs passes these gates in
order; the first that fails makes it not evaluable:

1. both used_percent endpoints known            else missing-quota-telemetry
2. equal durations (within DURATION_TOLERANCE),
   same reset identity/time in both arms         else quota-interval-mismatch
3. same-reset continuity, one reset identity and
   time from start to end, end before resets_at  else quota-reset-crossing
4. unrelated concurrent use explicitly false     else unrelated-concurrent-quota-use
5. known precision in both arms                  else unknown-quota-precision
6. no decrease within either interval            else same-reset-utilization-decrease

Then consumption c = end − start per arm and U = the sum of both precisions:
candidate − baseline > U is a regression (rejected); an increase within U is
inconclusive; baseline − candidate > U is a reduction. Supported needs matching
provider/window sets, every interval evaluable, no increase, and at least one
reduction. Arithmetic is decimal on the values as written, so 0.1 + 0.2 is 0.3.

Durations count as equal when they differ by at most max(1 s, 1 % of the longer
one): a trial schedules both arms' intervals to the same length, but the "after"
observation is taken a few milliseconds late. A larger difference (e.g. a run
that outlasted its scheduled interval) is still a mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from enum import StrEnum

from pairlab.core.schemas.quota import Continuity
from pairlab.core.verdict.artifact import QuotaInterval, Run
from pairlab.core.verdict.outcome import Assessment, Verdict
from pairlab.core.verdict.reasons import VerdictReason, sorted_codes


class QuotaOutcome(StrEnum):
    REDUCTION = "reduction"
    REGRESSION = "regression"
    INCREASE_WITHIN_UNCERTAINTY = "increase-within-uncertainty"
    NO_INCREASE = "no-increase"
    NOT_EVALUABLE = "not-evaluable"


@dataclass(frozen=True)
class QuotaComparison:
    provider: str
    window: str
    outcome: QuotaOutcome
    reason: VerdictReason | None = None
    baseline_consumption: Decimal | None = None
    candidate_consumption: Decimal | None = None
    uncertainty: Decimal | None = None

    def to_json(self) -> dict[str, object]:
        def number(value: Decimal | None) -> float | None:
            return None if value is None else float(value)

        return {
            "provider": self.provider,
            "window": self.window,
            "outcome": str(self.outcome),
            "baseline_consumption_percent": number(self.baseline_consumption),
            "candidate_consumption_percent": number(self.candidate_consumption),
            "uncertainty_percent": number(self.uncertainty),
            "reason_codes": sorted_codes([self.reason] if self.reason else []),
        }


DURATION_TOLERANCE_S = 1.0  # absolute floor of the equal-duration tolerance
DURATION_TOLERANCE_SHARE = 0.01  # relative part: 1 % of the longer duration


def equal_durations(a: timedelta, b: timedelta) -> bool:
    """|a - b| <= max(1 s, 1 % of the longer duration)."""
    longest = max(a, b).total_seconds()
    allowed = max(DURATION_TOLERANCE_S, DURATION_TOLERANCE_SHARE * longest)
    return abs((a - b).total_seconds()) <= allowed


def _exact(value: float) -> Decimal:
    return Decimal(repr(value))


def _crosses_reset(interval: QuotaInterval) -> bool:
    start, end = interval.start, interval.end
    return (
        interval.continuity is not Continuity.SAME_RESET
        or start.reset_id is None
        or start.reset_id != end.reset_id
        or start.resets_at is None
        or start.resets_at != end.resets_at
        or end.observed_at >= start.resets_at
    )


def _gate(base: QuotaInterval, cand: QuotaInterval) -> VerdictReason | None:
    pair = (base, cand)
    if any(p.used_percent is None for i in pair for p in (i.start, i.end)):
        return VerdictReason.MISSING_QUOTA_TELEMETRY
    if not equal_durations(base.duration, cand.duration) or (
        base.start.reset_id,
        base.start.resets_at,
    ) != (cand.start.reset_id, cand.start.resets_at):
        return VerdictReason.QUOTA_INTERVAL_MISMATCH
    if any(_crosses_reset(i) for i in pair):
        return VerdictReason.QUOTA_RESET_CROSSING
    if any(i.unrelated_concurrent_use is not False for i in pair):
        return VerdictReason.UNRELATED_CONCURRENT_QUOTA_USE
    if any(i.precision_percent is None for i in pair):
        return VerdictReason.UNKNOWN_QUOTA_PRECISION
    if any(_consumption(i) < 0 for i in pair):
        return VerdictReason.SAME_RESET_UTILIZATION_DECREASE
    return None


def _consumption(interval: QuotaInterval) -> Decimal:
    assert interval.start.used_percent is not None and interval.end.used_percent is not None
    return _exact(interval.end.used_percent) - _exact(interval.start.used_percent)


def compare_interval(base: QuotaInterval, cand: QuotaInterval) -> QuotaComparison:
    key = (base.provider, base.window)
    blocked = _gate(base, cand)
    if blocked is not None:
        return QuotaComparison(*key, QuotaOutcome.NOT_EVALUABLE, blocked)
    assert base.precision_percent is not None and cand.precision_percent is not None
    used_base, used_cand = _consumption(base), _consumption(cand)
    uncertainty = _exact(base.precision_percent) + _exact(cand.precision_percent)
    delta = used_cand - used_base
    numbers = (used_base, used_cand, uncertainty)
    if delta > uncertainty:
        return QuotaComparison(
            *key,
            QuotaOutcome.REGRESSION,
            VerdictReason.SUBSCRIPTION_CONSUMPTION_REGRESSION,
            *numbers,
        )
    if delta > 0:
        return QuotaComparison(
            *key,
            QuotaOutcome.INCREASE_WITHIN_UNCERTAINTY,
            VerdictReason.QUOTA_CHANGE_WITHIN_UNCERTAINTY,
            *numbers,
        )
    if -delta > uncertainty:
        return QuotaComparison(*key, QuotaOutcome.REDUCTION, None, *numbers)
    return QuotaComparison(*key, QuotaOutcome.NO_INCREASE, None, *numbers)


def assess_subscription(base: Run, cand: Run) -> tuple[Assessment, list[QuotaComparison]]:
    if not base.quota_intervals or not cand.quota_intervals:
        return Assessment(
            Verdict.INCONCLUSIVE, frozenset({VerdictReason.MISSING_QUOTA_TELEMETRY})
        ), []
    base_by_key = {(i.provider, i.window): i for i in base.quota_intervals}
    cand_by_key = {(i.provider, i.window): i for i in cand.quota_intervals}
    doubts: set[VerdictReason] = set()
    covered = {provider for provider, _ in base_by_key} & {provider for provider, _ in cand_by_key}
    if base_by_key.keys() != cand_by_key.keys() or not (base.providers | cand.providers) <= covered:
        doubts.add(VerdictReason.MISSING_QUOTA_WINDOW)
    comparisons = [
        compare_interval(base_by_key[key], cand_by_key[key])
        for key in sorted(base_by_key.keys() & cand_by_key.keys())
    ]
    reasons = {c.reason for c in comparisons if c.reason is not None} | doubts
    outcomes = {c.outcome for c in comparisons}
    if QuotaOutcome.REGRESSION in outcomes:
        return Assessment(Verdict.REJECTED, frozenset(reasons)), comparisons
    if reasons:
        return Assessment(Verdict.INCONCLUSIVE, frozenset(reasons)), comparisons
    if QuotaOutcome.REDUCTION in outcomes:
        return Assessment(Verdict.SUPPORTED), comparisons
    reasons.add(VerdictReason.QUOTA_REDUCTION_NOT_ESTABLISHED)
    return Assessment(Verdict.INCONCLUSIVE, frozenset(reasons)), comparisons
