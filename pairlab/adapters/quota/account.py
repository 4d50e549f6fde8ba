"""The account side of a measured run: quota snapshots, the account's charge counter, and
the quota bracket around a run (:func:`quota_interval`), written once.

The bracket is the same for one episode (the eval's per-episode snapshots), one
arm's scheduled interval (a quota-aware eval, flows/evidence/quota_block.py) and one
canary run (flows/canary/running.py):

1. scheduled intervals only: wait for a whole second;
2. the account's concurrency mark, the "before" snapshot; a scheduled interval ends
   ``interval_s`` after the whole second it started in (loom's observations count
   whole epoch seconds, so equal intervals have equal durations there too);
3. the body runs;
4. scheduled intervals only: an overrun is recorded (never hidden), then wait for the
   scheduled end;
5. the "after" snapshot, the end mark, and the assessment of concurrent use between
   the marks (the bracket's own episodes are not "unrelated").

The scheduled start is the later of the wall clock and the snapshot's ``observed_at``
(:func:`_anchor`): a rollout line's time may be older than the look, which would end
the interval before it began.
Probes fail soft: a missing measurement is unknown, never 0.
"""

from __future__ import annotations

import math
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pairlab.core.quota.consumption import UNKNOWN_CONCURRENT_USE, ConcurrentUse
from pairlab.core.schemas.profile import RunnerProfile
from pairlab.core.schemas.quota import QuotaObservation


def snapshot_quota(profile: RunnerProfile, account_dir: Path | None) -> list[QuotaObservation]:
    """One look at the account's windows through the profile's quota probe.

    A registered account's probe names the account, not its credential: the credential is
    read from the account store for this one look (adapters/accounts/quota_wiring.py); a
    store that cannot be read now gives explicit unknowns, like any unavailable source."""
    from pairlab.adapters.accounts.quota_wiring import resolve_account_options
    from pairlab.adapters.quota import make_probe
    from pairlab.adapters.quota.base import unknown_observations
    from pairlab.core.errors import PairlabError

    options: dict[str, object] = dict(profile.quota.options)
    if account_dir is not None:
        options.setdefault("account_dir", str(account_dir))
    try:
        options = resolve_account_options(options)
    except PairlabError as exc:
        return unknown_observations(profile.client, profile.quota.probe, str(exc.reason))
    return make_probe(profile.quota.probe, **options).snapshot()


def concurrency_mark(profile: RunnerProfile, account_dir: Path | None) -> int | None:
    """Where the account keeps a charge log (the simulator's, the provider emulator's), its
    counter now; else None."""
    if profile.quota.charge_log_url is not None:
        from pairlab.adapters.quota.emulator_account import charge_mark as emulator_mark

        return emulator_mark(profile.quota.charge_log_url)
    if profile.quota.probe != "sim" or account_dir is None:
        return None
    from pairlab.adapters.quota.sim_account import charge_mark

    return charge_mark(account_dir)


def assess_concurrent_use(
    profile: RunnerProfile,
    account_dir: Path | None,
    marks: tuple[int | None, int | None],
    own_episode_ids: Collection[str],
    asserted: bool | None,
) -> ConcurrentUse:
    """Did anything else consume the account between the two marks?

    The simulator's or the provider emulator's account: its charge log decides (ground
    truth; the operator's assertion is not needed). Any other account: the operator's
    assertion from the run parameters, unknown when there is none."""
    if profile.quota.charge_log_url is not None:
        from pairlab.adapters.quota.emulator_account import assess_from_emulator

        return assess_from_emulator(
            profile.quota.charge_log_url, marks[0], marks[1], own_episode_ids
        )
    if profile.quota.probe == "sim" and account_dir is not None:
        from pairlab.adapters.quota.sim_account import assess_from_log

        return assess_from_log(account_dir, marks[0], marks[1], own_episode_ids)
    if asserted is None:
        return UNKNOWN_CONCURRENT_USE
    return ConcurrentUse(unrelated=asserted, basis="operator-assertion")


@dataclass
class QuotaBracket:
    """What one quota bracket observed. ``before`` and ``started_at`` are set when the
    body starts; the rest when the bracket closes (after a body that did not raise)."""

    started_at: datetime
    before: list[QuotaObservation]
    scheduled_s: float | None = None
    after: list[QuotaObservation] = field(default_factory=list)
    ended_at: datetime | None = None
    overrun: bool = False
    concurrent_use: ConcurrentUse = UNKNOWN_CONCURRENT_USE


@contextmanager
def quota_interval(
    profile: RunnerProfile,
    account_dir: Path | None,
    interval_s: float | None = None,
    *,
    own_episode_ids: Collection[str] = (),
    asserted_concurrent_use: bool | None = None,
) -> Iterator[QuotaBracket]:
    """Bracket the body between two quota snapshots and two concurrency marks.

    ``interval_s`` None: the snapshots are taken right around the body (one episode's
    run). Else a scheduled interval: it starts on a whole second, ends ``interval_s``
    after it whatever the body took (an overrun is recorded), and the end snapshot is
    taken at the scheduled end. ``asserted_concurrent_use`` is the operator's assertion
    (None = unknown), used only where the account keeps no charge log."""
    if interval_s is not None:
        wait_until(math.ceil(time.time()))
    started_at = datetime.now(UTC)
    start_mark = concurrency_mark(profile, account_dir)
    before = snapshot_quota(profile, account_dir)
    bracket = QuotaBracket(started_at=started_at, before=before, scheduled_s=interval_s)
    deadline = None if interval_s is None else math.floor(_anchor(started_at, before)) + interval_s
    yield bracket
    if deadline is not None:
        bracket.overrun = time.time() > deadline
        wait_until(deadline)
    bracket.after = snapshot_quota(profile, account_dir)
    bracket.ended_at = datetime.now(UTC)
    end_mark = concurrency_mark(profile, account_dir)
    bracket.concurrent_use = assess_concurrent_use(
        profile, account_dir, (start_mark, end_mark), own_episode_ids, asserted_concurrent_use
    )


def _anchor(started_at: datetime, before: list[QuotaObservation]) -> float:
    """When a scheduled interval starts: the later of the wall-clock start and the "before"
    snapshot's own time. A fresh source (the simulator) times its look after the start, so
    the interval ends exactly ``interval_s`` whole seconds after the look loom will see,
    even when taking the mark and the snapshot crossed a second; a stale source (a rollout
    line older than the look) never ends the interval before it began."""
    looked = min((o.observed_at.timestamp() for o in before), default=started_at.timestamp())
    return max(started_at.timestamp(), looked)


def wait_until(moment: float) -> None:
    """Sleep until the epoch time ``moment`` (at once when it has passed)."""
    while (left := moment - time.time()) > 0:
        time.sleep(left)


__all__ = [
    "QuotaBracket",
    "assess_concurrent_use",
    "concurrency_mark",
    "quota_interval",
    "snapshot_quota",
    "wait_until",
]
