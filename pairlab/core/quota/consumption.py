"""Subscription quota consumed over one interval, per (provider, window) (issue 16).

An interval is two quota snapshots (``before``, ``after``): an episode's
``quotaBefore``/``quotaAfter``, or a scheduled quota interval's start and end.
For each (provider, window) the consumption is ``after - before`` percentage
points only when every check below passes; the first failing check makes it
null with that reason (the canary verdict's gate order, DESIGN 9, and its
kebab-case codes where the meaning is the same):

1. the window is observed exactly once at both ends  else missing-quota-window
                                                       (ambiguous-quota-window when
                                                       a snapshot repeats it)
2. both used percentages known                        else missing-quota-telemetry
3. the interval is ordered (end not before start)     else quota-interval-mismatch
4. one reset identity and time at both ends, and the
   interval ends before that reset                    else quota-reset-crossing
5. no decrease under that reset                       else same-reset-utilization-decrease
6. neither end at 100 % (a capped source hides
   whatever was used beyond the cap)                  else quota-window-saturated
7. unrelated concurrent use explicitly excluded       else unrelated-concurrent-quota-use
8. both precisions known                              else unknown-quota-precision

A usable interval's precision is the larger of its two ends' (as the canary's
artifact builder does). Arithmetic is decimal on the values as written, so
12.3 - 12.1 is 0.2. Null is never 0: an unusable interval never becomes a zero
consumption anywhere.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Final

from pairlab.core.schemas.episode import ConcurrentUseBasis, EpisodeRecord
from pairlab.core.schemas.quota import QuotaConsumption, QuotaObservation
from pairlab.core.verdict.reasons import VerdictReason

SATURATED_PERCENT: Final = 100.0


class NullReason(StrEnum):
    """Why a consumption is null; the canary's codes where the meaning is the same."""

    MISSING_QUOTA_WINDOW = VerdictReason.MISSING_QUOTA_WINDOW.value
    AMBIGUOUS_QUOTA_WINDOW = "ambiguous-quota-window"
    MISSING_QUOTA_TELEMETRY = VerdictReason.MISSING_QUOTA_TELEMETRY.value
    QUOTA_INTERVAL_MISMATCH = VerdictReason.QUOTA_INTERVAL_MISMATCH.value
    QUOTA_RESET_CROSSING = VerdictReason.QUOTA_RESET_CROSSING.value
    SAME_RESET_UTILIZATION_DECREASE = VerdictReason.SAME_RESET_UTILIZATION_DECREASE.value
    QUOTA_WINDOW_SATURATED = "quota-window-saturated"
    UNRELATED_CONCURRENT_QUOTA_USE = VerdictReason.UNRELATED_CONCURRENT_QUOTA_USE.value
    UNKNOWN_QUOTA_PRECISION = VerdictReason.UNKNOWN_QUOTA_PRECISION.value


@dataclass(frozen=True)
class ConcurrentUse:
    """Whether anything else consumed the account during an interval, and how we know.

    ``unrelated`` None means not established (no ground truth, no assertion): a
    consumption then stays null (unrelated-concurrent-quota-use)."""

    unrelated: bool | None = None
    basis: ConcurrentUseBasis | None = None


UNKNOWN_CONCURRENT_USE: Final = ConcurrentUse()


def _exact(value: float) -> Decimal:
    return Decimal(repr(value))


def _blocked(
    start: QuotaObservation, end: QuotaObservation, unrelated_concurrent_use: bool | None
) -> NullReason | None:
    if start.used_percent is None or end.used_percent is None:
        return NullReason.MISSING_QUOTA_TELEMETRY
    if end.observed_at < start.observed_at:
        return NullReason.QUOTA_INTERVAL_MISMATCH
    if (
        start.reset_id is None
        or start.reset_id != end.reset_id
        or start.resets_at is None
        or start.resets_at != end.resets_at
        or end.observed_at >= start.resets_at
    ):
        return NullReason.QUOTA_RESET_CROSSING
    if end.used_percent < start.used_percent:
        return NullReason.SAME_RESET_UTILIZATION_DECREASE
    if max(start.used_percent, end.used_percent) >= SATURATED_PERCENT:
        return NullReason.QUOTA_WINDOW_SATURATED
    if unrelated_concurrent_use is not False:
        return NullReason.UNRELATED_CONCURRENT_QUOTA_USE
    if start.precision_percent is None or end.precision_percent is None:
        return NullReason.UNKNOWN_QUOTA_PRECISION
    return None


def window_consumption(
    start: QuotaObservation, end: QuotaObservation, unrelated_concurrent_use: bool | None
) -> QuotaConsumption:
    """The consumption of one window between two observations of it."""
    reason = _blocked(start, end, unrelated_concurrent_use)
    precisions = (start.precision_percent, end.precision_percent)
    known = None if None in precisions else max(p for p in precisions if p is not None)
    used: float | None = None
    if reason is None:
        assert start.used_percent is not None and end.used_percent is not None
        used = float(_exact(end.used_percent) - _exact(start.used_percent))
    return QuotaConsumption(
        provider=start.provider,
        window=start.window,
        consumption_percent=used,
        precision_percent=known,
        reason=None if reason is None else str(reason),
        reset_id=start.reset_id if reason is None else None,
        started_at=start.observed_at,
        ended_at=end.observed_at,
    )


def interval_consumption(
    before: Sequence[QuotaObservation] | None,
    after: Sequence[QuotaObservation] | None,
    unrelated_concurrent_use: bool | None,
) -> list[QuotaConsumption]:
    """One entry per (provider, window) seen at either end, sorted; [] with no snapshot."""
    starts, ends = list(before or []), list(after or [])
    n_start = Counter((o.provider, o.window) for o in starts)
    n_end = Counter((o.provider, o.window) for o in ends)
    first = {(o.provider, o.window): o for o in starts}
    last = {(o.provider, o.window): o for o in ends}
    out = []
    for key in sorted(n_start.keys() | n_end.keys()):
        if n_start[key] > 1 or n_end[key] > 1:
            reason = NullReason.AMBIGUOUS_QUOTA_WINDOW
        elif not (n_start[key] and n_end[key]):
            reason = NullReason.MISSING_QUOTA_WINDOW
        else:
            out.append(window_consumption(first[key], last[key], unrelated_concurrent_use))
            continue
        out.append(QuotaConsumption(provider=key[0], window=key[1], reason=str(reason)))
    return out


def record_consumption(record: EpisodeRecord) -> list[QuotaConsumption]:
    """The record's stored consumption, else derived from its snapshots (older records:
    concurrent use then counts as not excluded unless the record says otherwise)."""
    if record.quota_consumption is not None:
        return list(record.quota_consumption)
    return interval_consumption(
        record.quota_before, record.quota_after, record.unrelated_concurrent_quota_use
    )


# The account-wide windows exposed as flat columns (frame and episodes.parquet): the
# consumption (a nullable metric), why it is null, and its precision (the smallest
# change the window can show). Scoped windows (provider "claude:opus", ...) and other
# lengths stay in the nested list.
ACCOUNT_WINDOW_COLUMNS: Final = {
    "five-hour": (
        "quotaFiveHourConsumptionPct",
        "quotaFiveHourNullReason",
        "quotaFiveHourPrecisionPct",
    ),
    "seven-day": (
        "quotaSevenDayConsumptionPct",
        "quotaSevenDayNullReason",
        "quotaSevenDayPrecisionPct",
    ),
}
QUOTA_METRICS: Final = tuple(names[0] for names in ACCOUNT_WINDOW_COLUMNS.values())
QUOTA_REASON_COLUMNS: Final = tuple(names[1] for names in ACCOUNT_WINDOW_COLUMNS.values())
QUOTA_PRECISION_COLUMNS: Final = tuple(names[2] for names in ACCOUNT_WINDOW_COLUMNS.values())


def account_window_columns(
    consumption: Iterable[QuotaConsumption], observed: bool
) -> dict[str, float | str | None]:
    """Flat columns for the account-wide (unscoped) provider's five-hour and seven-day
    windows: the value or null and a reason, and the precision. ``observed``: the
    interval has snapshots (else a missing window is missing telemetry)."""
    by_window: dict[str, list[QuotaConsumption]] = {}
    for entry in consumption:
        if ":" not in entry.provider:
            by_window.setdefault(entry.window, []).append(entry)
    out: dict[str, float | str | None] = {}
    for window, (value_col, reason_col, precision_col) in ACCOUNT_WINDOW_COLUMNS.items():
        found = by_window.get(window, [])
        if len(found) == 1:
            out[value_col], out[reason_col] = found[0].consumption_percent, found[0].reason
            out[precision_col] = found[0].precision_percent
            continue
        out[value_col] = out[precision_col] = None
        out[reason_col] = str(
            NullReason.AMBIGUOUS_QUOTA_WINDOW
            if found
            else NullReason.MISSING_QUOTA_WINDOW
            if observed
            else NullReason.MISSING_QUOTA_TELEMETRY
        )
    return out


def record_columns(record: EpisodeRecord) -> dict[str, float | str | None]:
    """:func:`account_window_columns` of one episode record."""
    observed = bool(record.quota_before) or bool(record.quota_after)
    return account_window_columns(record_consumption(record), observed)


__all__ = [
    "ACCOUNT_WINDOW_COLUMNS",
    "QUOTA_METRICS",
    "QUOTA_PRECISION_COLUMNS",
    "QUOTA_REASON_COLUMNS",
    "UNKNOWN_CONCURRENT_USE",
    "ConcurrentUse",
    "NullReason",
    "account_window_columns",
    "interval_consumption",
    "record_columns",
    "record_consumption",
    "window_consumption",
]
