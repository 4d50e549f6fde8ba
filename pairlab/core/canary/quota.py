"""A run's quota snapshots as loom's quota observations (LOOM-ARTIFACT §1, §3).

The canary snapshots every window right before a run's scheduled interval and
right after it ends. Each window seen at both ends becomes one observation:
the start's reset identity and time, both used percentages, the observation
times and the reset time as whole epoch seconds (truncated, as a Unix time
is), the coarser of the two precisions, the operator's concurrent-use
assessment and the continuity between the two snapshots (DESIGN 5.4; a
changed reset identity is never ``same-reset``).

Only what the sources stated is written. A window loom cannot hold (not five-
hour or seven-day), an endpoint without a used percentage, a reset identity or
time, or a reading loom would refuse (an interval shorter than a second, a
reset already past at the start) is left out, and the run's quota evidence is
then honestly missing for that window. A precision loom cannot hold (not in
(0, 100]) is unknown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pairlab.core.canary.manifest import to_identifier
from pairlab.core.schemas.quota import Continuity, continuity
from pairlab.core.schemas.quota import QuotaObservation as Snapshot
from pairlab.core.verdict.artifact import Provider, QuotaWindow


def epoch_seconds(moment: datetime) -> int:
    return math.floor(moment.timestamp())


def _precision(start: Snapshot, end: Snapshot) -> float | None:
    if start.precision_percent is None or end.precision_percent is None:
        return None
    coarser = max(start.precision_percent, end.precision_percent)
    return coarser if 0.0 < coarser <= 100.0 else None


def quota_observation(
    provider: Provider, start: Snapshot, end: Snapshot, unrelated_concurrent_use: bool | None
) -> dict[str, Any] | None:
    """One window's interval from its two snapshots, or None if loom cannot hold it."""
    if start.window not in tuple(QuotaWindow) or end.window != start.window:
        return None
    if (
        start.used_percent is None
        or end.used_percent is None
        or start.resets_at is None
        or not start.reset_id
    ):
        return None
    begin, finish = epoch_seconds(start.observed_at), epoch_seconds(end.observed_at)
    resets_at = epoch_seconds(start.resets_at)
    if not begin < finish or resets_at <= begin:
        return None
    between = continuity(start, end)
    if between is Continuity.SAME_RESET and end.reset_id != start.reset_id:
        between = Continuity.UNKNOWN
    return {
        "provider": str(provider),
        "window": start.window,
        "reset_id": to_identifier(start.reset_id),
        "resets_at": resets_at,
        "observed_start_at": begin,
        "observed_end_at": finish,
        "used_percent_start": start.used_percent,
        "used_percent_end": end.used_percent,
        "precision_percent": _precision(start, end),
        "unrelated_concurrent_use": unrelated_concurrent_use,
        "continuity": str(between),
    }


def _account_wide(snapshots: Sequence[Snapshot]) -> dict[str, Snapshot]:
    found: dict[str, list[Snapshot]] = {}
    for snap in snapshots:
        if ":" not in snap.provider:  # claude:<scope> is a model-scoped window
            found.setdefault(snap.window, []).append(snap)
    return {window: snaps[0] for window, snaps in found.items() if len(snaps) == 1}


def quota_observations(
    provider: Provider,
    before: Sequence[Snapshot],
    after: Sequence[Snapshot],
    unrelated_concurrent_use: bool | None,
) -> list[dict[str, Any]] | None:
    """One observation per account-wide window seen at both ends (five-hour first); None
    when none is. A model-scoped window (provider ``claude:<scope>``) shares its name with
    the account's own and is never taken for it; a window two account-wide snapshots
    claim at one end is ambiguous and left out (honestly missing)."""
    starts = _account_wide(before)
    ends = _account_wide(after)
    found = []
    for window in QuotaWindow:
        if window in starts and window in ends:
            obs = quota_observation(
                provider, starts[window], ends[window], unrelated_concurrent_use
            )
            if obs is not None:
                found.append(obs)
    return found or None
