"""Who else used an emulated account during an interval: the provider emulator's ground truth.

The emulator numbers every charge to an account's quota and remembers the episode that
made it (``GET /admin/accounts/<a>/charges?after=N``, docs/emulator.md). As with the
simulator's charge log (``sim_account``), a *mark* is the counter at one moment; two
marks read right before an interval's first snapshot and right after its last bracket
every charge made in it, and any charge by an episode other than the interval's own is
unrelated concurrent use. A mark or a log that cannot be read leaves it unknown.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pairlab.adapters.quota.http_fetch import fetch_json
from pairlab.core.quota.consumption import UNKNOWN_CONCURRENT_USE, ConcurrentUse

_TIMEOUT_S = 10.0


def _charges(url: str, after: int) -> dict[str, Any] | None:
    result = fetch_json(
        f"{url}?after={after}", {"Accept": "application/json"}, timeout_s=_TIMEOUT_S
    )
    return result.data


def charge_mark(url: str) -> int | None:
    """The account's charge counter now; None when the emulator cannot be read."""
    data = _charges(url, 0)
    mark = data.get("mark") if data else None
    return mark if isinstance(mark, int) and not isinstance(mark, bool) and mark >= 0 else None


def assess_from_emulator(
    url: str, start: int | None, end: int | None, own_episode_ids: Collection[str]
) -> ConcurrentUse:
    """Ground truth for one interval bracketed by two marks."""
    if start is None or end is None or end < start:
        return UNKNOWN_CONCURRENT_USE
    data = _charges(url, start)
    charges = data.get("charges") if data else None
    if not isinstance(charges, list):
        return UNKNOWN_CONCURRENT_USE
    bracketed = [
        c
        for c in charges
        if isinstance(c, dict) and isinstance(c.get("seq"), int) and c["seq"] <= end
    ]
    if len(bracketed) != end - start:
        return UNKNOWN_CONCURRENT_USE
    others = [c for c in bracketed if c.get("episode_id") not in own_episode_ids]
    return ConcurrentUse(unrelated=bool(others), basis="emulator-charge-log")


__all__ = ["assess_from_emulator", "charge_mark"]
