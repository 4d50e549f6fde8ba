"""Quota-aware execution of an evidence eval (issue 16, item 3).

With ``quota_interval_episodes`` set, the plan groups a task's repetitions into
blocks (:mod:`pairlab.core.schedule`); this module runs one block: for each arm, in
the block's Williams order, one scheduled quota interval of ``quota_interval_s``
seconds, in the quota bracket the canary uses too
(:func:`pairlab.adapters.quota.account.quota_interval`: start on a whole second,
snapshots and concurrency marks, overrun recorded, end snapshot at the scheduled end),
the arm's episodes back to back inside it (each still between its own snapshots);
then the consumption per window and the interval record are persisted
(``quota-intervals/<id>.json``; ``quota-intervals.jsonl`` at the end).

The ``run-quota-block`` task stays here, beside the interval it runs, for the same
reason as ``run-pair`` (flows/evidence/episode.py): it runs episode attempts with
the flow's parameters, and ``tasks`` may not import ``flows``.

A resumed interval (some of its episodes were recorded by an earlier attempt)
holds less work than its peers: its record says so and its consumption is null
(quota-interval-mismatch), never a smaller number.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from flows.evidence.episode import EpisodeContext, attempt_episode
from flows.params import EvidenceEvalParams
from pairlab.adapters.quota.account import quota_interval
from pairlab.adapters.run.directory import RunDir
from pairlab.adapters.run.quota_interval_files import (
    load_interval,
    save_interval,
    write_intervals_jsonl,
)
from pairlab.core.quota.intervals import build_interval_record
from pairlab.core.schedule import PlannedEpisode, QuotaIntervalPlan, Schedule
from pairlab.core.schemas.episode import EpisodeRecord


def quota_interval_plan(params: EvidenceEvalParams) -> QuotaIntervalPlan | None:
    """The run's quota-interval plan (None: per-episode snapshots only)."""
    if params.quota_interval_episodes is None:
        return None
    return QuotaIntervalPlan(
        episodes_per_interval=params.quota_interval_episodes, interval_s=params.quota_interval_s
    )


def run_interval(
    interval: list[PlannedEpisode], ctx: EpisodeContext, done: dict[str, EpisodeRecord]
) -> list[EpisodeRecord]:
    """One arm's scheduled interval: its episodes between the interval's two snapshots."""
    interval_id = interval[0].quota_interval
    assert interval_id is not None
    run_dir, params = ctx.run_dir, ctx.params
    if load_interval(run_dir, interval_id) is not None and all(
        p.episode_id in done for p in interval
    ):
        return [done[p.episode_id] for p in interval]
    records, ran = [], []
    with quota_interval(
        ctx.profile,
        ctx.account_dir,
        params.quota_interval_s,
        own_episode_ids={p.episode_id for p in interval},
        asserted_concurrent_use=params.unrelated_concurrent_use,
    ) as bracket:
        for planned in interval:
            if planned.episode_id in done:
                records.append(done[planned.episode_id])
                continue
            records.append(attempt_episode(planned, ctx))
            ran.append(planned.episode_id)
    assert bracket.ended_at is not None
    record = build_interval_record(
        interval_id=interval_id,
        run_id=run_dir.run_id,
        task_id=interval[0].task_id,
        arm=interval[0].arm,
        order=interval[0].order,
        episode_ids=[p.episode_id for p in interval],
        ran_episode_ids=ran,
        scheduled_s=params.quota_interval_s,
        started_at=bracket.started_at,
        ended_at=bracket.ended_at,
        overrun=bracket.overrun,
        quota_start=bracket.before,
        quota_end=bracket.after,
        concurrent_use=bracket.concurrent_use,
    )
    save_interval(run_dir, record)
    return records


@task(name="run-quota-block", cache_policy=NO_CACHE, persist_result=False)
def run_quota_block(
    block: list[PlannedEpisode], ctx: EpisodeContext, done: dict[str, EpisodeRecord]
) -> list[EpisodeRecord]:
    """Every arm's interval of one block, one after another in planned order."""
    intervals: dict[str, list[PlannedEpisode]] = {}
    for planned in block:
        assert planned.quota_interval is not None
        intervals.setdefault(planned.quota_interval, []).append(planned)
    return [r for interval in intervals.values() for r in run_interval(interval, ctx, done)]


def write_quota_intervals(run_dir: RunDir, schedule: Schedule) -> Path | None:
    """``quota-intervals.jsonl`` of a quota-aware run, in plan order (None otherwise)."""
    if schedule.quota_intervals is None:
        return None
    ids = [i[0].quota_interval for i in schedule.intervals() if i[0].quota_interval]
    return write_intervals_jsonl(run_dir, ids)


__all__ = ["quota_interval_plan", "run_interval", "run_quota_block", "write_quota_intervals"]
