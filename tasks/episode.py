"""Tasks for one episode: prepare, quota snapshot, run, collect usage, grade, record, teardown."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from pairlab.adapters.backends.base import (
    CollectedFiles,
    EpisodeSpec,
    ExecutionBackend,
    PreparedEpisode,
    RunOutcome,
)
from pairlab.adapters.episode_io import (
    EpisodeUsage,
    ingest_ledger,
    read_episode_usage,
    snapshot_quota,
)
from pairlab.adapters.grading import grade
from pairlab.adapters.rundir import RunDir
from pairlab.core.schemas.catalog import TaskEntry
from pairlab.core.schemas.episode import EpisodeRecord, GraderCheck
from pairlab.core.schemas.profile import RunnerProfile
from pairlab.core.schemas.quota import QuotaObservation
from tasks.retry import INFRA_RETRIES, INFRA_RETRY_DELAYS_S, retry_on_infrastructure

_infra = {
    "retries": INFRA_RETRIES,
    "retry_delay_seconds": INFRA_RETRY_DELAYS_S,
    "retry_condition_fn": retry_on_infrastructure,
    "cache_policy": NO_CACHE,
    "persist_result": False,
}


@task(name="prepare", **_infra)  # type: ignore[call-overload]
def prepare_episode(backend: ExecutionBackend, spec: EpisodeSpec) -> PreparedEpisode:
    return backend.prepare(spec)


@task(name="quota-snapshot", cache_policy=NO_CACHE, persist_result=False)
def quota_snapshot(profile: RunnerProfile, account_dir: Path | None) -> list[QuotaObservation]:
    return snapshot_quota(profile, account_dir)


@task(name="run", cache_policy=NO_CACHE, persist_result=False)
def run_episode(backend: ExecutionBackend, prepared: PreparedEpisode) -> RunOutcome:
    # Never retried: whatever the agent did is the data.
    return backend.run(prepared)


@task(name="collect", **_infra)  # type: ignore[call-overload]
def collect_episode(
    backend: ExecutionBackend, prepared: PreparedEpisode, dest: Path
) -> CollectedFiles:
    return backend.collect(prepared, dest)


@task(name="collect-usage", cache_policy=NO_CACHE, persist_result=False)
def collect_usage(profile: RunnerProfile, collected_dir: Path) -> EpisodeUsage:
    return read_episode_usage(profile, collected_dir)


@task(name="grade", cache_policy=NO_CACHE, persist_result=False)
def grade_episode(
    backend: ExecutionBackend,
    prepared: PreparedEpisode,
    task_entry: TaskEntry,
    final_answer: str | None,
    delivered_tokens: int | None,
) -> list[GraderCheck]:
    return grade(backend, prepared, task_entry, final_answer, delivered_tokens)


@task(name="ledger", cache_policy=NO_CACHE, persist_result=False)
def collect_ledger(collected_dir: Path, episode_dir: Path) -> dict[str, int | None] | None:
    return ingest_ledger(collected_dir, episode_dir)


@task(name="record", **_infra)  # type: ignore[call-overload]
def record_episode(run_dir: RunDir, record: EpisodeRecord) -> EpisodeRecord:
    run_dir.save_record(record)
    return record


@task(name="teardown", **_infra)  # type: ignore[call-overload]
def teardown_episode(backend: ExecutionBackend, prepared: PreparedEpisode) -> None:
    backend.cleanup(prepared)


__all__ = [
    "collect_episode",
    "collect_ledger",
    "collect_usage",
    "grade_episode",
    "prepare_episode",
    "quota_snapshot",
    "record_episode",
    "run_episode",
    "teardown_episode",
]
