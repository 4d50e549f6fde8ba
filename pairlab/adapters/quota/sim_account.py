"""Who else used a simulated account during an interval: the simulator's ground truth.

The simulator numbers every charge (``charge_seq`` in quota.json) and logs it to
``charges.jsonl`` with the episode id (containers/simclient/README.md). A *mark*
is the account's charge counter at one moment. Reading a mark right before an
interval's first snapshot and right after its last one brackets every charge
made during the interval (and possibly one just outside it: the assessment errs
towards "not excluded", never towards a false "nobody else").

Concurrent use is then established, not assumed: any charge in the bracket by an
episode other than the interval's own is unrelated concurrent use. A mark or a
log that cannot be read leaves it unknown.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any, Final

from pairlab.core.quota.consumption import UNKNOWN_CONCURRENT_USE, ConcurrentUse

QUOTA_FILE: Final = "quota.json"
CHARGES_FILE: Final = "charges.jsonl"


def charge_mark(account_dir: Path) -> int | None:
    """The account's charge counter now: 0 before its first charge (no file, or a file
    opened without one); None when the file cannot be read."""
    try:
        data = json.loads((account_dir / QUOTA_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return 0
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    seq = data.get("charge_seq", 0)
    return seq if isinstance(seq, int) and not isinstance(seq, bool) and seq >= 0 else None


def charges_between(account_dir: Path, start: int, end: int) -> list[dict[str, Any]] | None:
    """The logged charges numbered ``start < seq <= end``; None unless all are logged."""
    if end < start:
        return None
    if end == start:
        return []
    try:
        lines = (account_dir / CHARGES_FILE).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    found: dict[int, dict[str, Any]] = {}
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a torn last line of a writer still holding the lock
        seq = entry.get("seq") if isinstance(entry, dict) else None
        if isinstance(seq, int) and start < seq <= end:
            found[seq] = entry
    return [found[s] for s in sorted(found)] if len(found) == end - start else None


def assess_from_log(
    account_dir: Path, start: int | None, end: int | None, own_episode_ids: Collection[str]
) -> ConcurrentUse:
    """Ground truth for one interval bracketed by two marks."""
    if start is None or end is None:
        return UNKNOWN_CONCURRENT_USE
    charges = charges_between(account_dir, start, end)
    if charges is None:
        return UNKNOWN_CONCURRENT_USE
    others = [c for c in charges if c.get("episode_id") not in own_episode_ids]
    return ConcurrentUse(unrelated=bool(others), basis="simulator-charge-log")


__all__ = ["assess_from_log", "charge_mark", "charges_between"]
