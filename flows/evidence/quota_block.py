"""Quota-aware execution of an evidence eval (issue 16, item 3).

With ``quota_interval_episodes`` set, the plan groups a task's repetitions into
blocks (:mod:`pairlab.core.schedule`); this module runs one block: for each arm, in
the block's Williams order, one scheduled quota interval of ``quota_interval_s``
seconds, as the canary does (flows/canary/trial.py):

1. wait for a whole second, read the account's concurrency mark, take the interval's
   start snapshot (the interval ends ``quota_interval_s`` after that second);
2. run the arm's episodes back to back (each still between its own snapshots);
3. wait until the interval's scheduled end (an overrun is recorded, not hidden),
   take the end snapshot and the mark;
4. assess concurrent use over the whole interval (the interval's own episodes are
   not "unrelated"), compute the consumption per window and persist the interval
   record (``quota-intervals/<id>.json``; ``quota-intervals.jsonl`` at the end).

A resumed interval (some of its episodes were recorded by an earlier attempt)
holds less work than its peers: its record says so and its consumption is null
(quota-interval-mismatch), never a smaller number.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from flows.params import EvidenceEvalParams
from pairlab.adapters.episode.io import (
    assess_concurrent_use,
    concurrency_mark,
    snapshot_quota,
)
from pairlab.adapters.run.directory import RunDir
from pairlab.adapters.run.quota_interval_files import (
    load_interval,
    save_interval,
    write_intervals_jsonl,
)
from pairlab.core.quota.intervals import build_interval_record
from pairlab.core.schedule import PlannedEpisode, QuotaIntervalPlan, Schedule
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.schemas.profile import RunnerProfile

Execute = Callable[[PlannedEpisode], EpisodeRecord]


def quota_interval_plan(params: EvidenceEvalParams) -> QuotaIntervalPlan | None:
    """The run's quota-interval plan (None: per-episode snapshots only)."""
    if params.quota_interval_episodes is None:
        return None
    return QuotaIntervalPlan(
        episodes_per_interval=params.quota_interval_episodes, interval_s=params.quota_interval_s
    )


def run_interval(
    interval: list[PlannedEpisode],
    *,
    params: EvidenceEvalParams,
    profile: RunnerProfile,
    run_dir: RunDir,
    account_dir: Path | None,
    done: dict[str, EpisodeRecord],
    execute: Execute,
) -> list[EpisodeRecord]:
    """One arm's scheduled interval: its episodes between the interval's two snapshots."""
    interval_id = interval[0].quota_interval
    assert interval_id is not None
    if load_interval(run_dir, interval_id) is not None and all(
        p.episode_id in done for p in interval
    ):
        return [done[p.episode_id] for p in interval]
    # Scheduled on the wall clock: a source's observed_at may be older than the look
    # (a rollout line's time), which would end the interval before it began. Like the
    # canary's, the interval starts on a whole second and ends a fixed length after
    # it: loom's observations count whole epoch seconds, so equal intervals then have
    # equal durations there too (else quota-interval-mismatch by a rounding second).
    _wait_until(math.ceil(time.time()))
    started_at = datetime.now(UTC)
    deadline = math.floor(started_at.timestamp()) + params.quota_interval_s
    start_mark = concurrency_mark(profile, account_dir)
    start = snapshot_quota(profile, account_dir)
    records, ran = [], []
    for planned in interval:
        if planned.episode_id in done:
            records.append(done[planned.episode_id])
            continue
        records.append(execute(planned))
        ran.append(planned.episode_id)
    overrun = time.time() > deadline
    _wait_until(deadline)
    end = snapshot_quota(profile, account_dir)
    ended_at = datetime.now(UTC)
    end_mark = concurrency_mark(profile, account_dir)
    concurrent = assess_concurrent_use(
        profile,
        account_dir,
        (start_mark, end_mark),
        {p.episode_id for p in interval},
        params.unrelated_concurrent_use,
    )
    record = build_interval_record(
        interval_id=interval_id,
        run_id=run_dir.run_id,
        task_id=interval[0].task_id,
        arm=interval[0].arm,
        order=interval[0].order,
        episode_ids=[p.episode_id for p in interval],
        ran_episode_ids=ran,
        scheduled_s=params.quota_interval_s,
        started_at=started_at,
        ended_at=ended_at,
        overrun=overrun,
        quota_start=start,
        quota_end=end,
        concurrent_use=concurrent,
    )
    save_interval(run_dir, record)
    return records


def _wait_until(moment: float) -> None:
    """Sleep until the epoch time ``moment`` (at once when it has passed)."""
    while (left := moment - time.time()) > 0:
        time.sleep(left)


@task(name="run-quota-block", cache_policy=NO_CACHE, persist_result=False)
def run_quota_block(
    block: list[PlannedEpisode],
    *,
    params: EvidenceEvalParams,
    profile: RunnerProfile,
    run_dir: RunDir,
    account_dir: Path | None,
    done: dict[str, EpisodeRecord],
    execute: Execute,
) -> list[EpisodeRecord]:
    """Every arm's interval of one block, one after another in planned order."""
    intervals: dict[str, list[PlannedEpisode]] = {}
    for planned in block:
        assert planned.quota_interval is not None
        intervals.setdefault(planned.quota_interval, []).append(planned)
    records: list[EpisodeRecord] = []
    for interval in intervals.values():
        records.extend(
            run_interval(
                interval,
                params=params,
                profile=profile,
                run_dir=run_dir,
                account_dir=account_dir,
                done=done,
                execute=execute,
            )
        )
    return records


def write_quota_intervals(run_dir: RunDir, schedule: Schedule) -> Path | None:
    """``quota-intervals.jsonl`` of a quota-aware run, in plan order (None otherwise)."""
    if schedule.quota_intervals is None:
        return None
    ids = [i[0].quota_interval for i in schedule.intervals() if i[0].quota_interval]
    return write_intervals_jsonl(run_dir, ids)


__all__ = ["quota_interval_plan", "run_interval", "run_quota_block", "write_quota_intervals"]
