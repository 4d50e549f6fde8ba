"""Tasks for one episode: prepare, run (between quota snapshots), collect and grade,
teardown, record.

Each task is one Prefect task run, so each costs a round of state events
(bench/README.md, Orchestration). Steps that are cheap and never retried on
their own are folded into the task they belong to: the quota snapshots into
the run they bracket, usage, ledger and grading into the collection whose files
they read. Retries still follow the rule of DESIGN 2: infrastructure steps are
retried, the agent's run never is. The steps themselves live in
:mod:`pairlab.adapters.episode.session` and :mod:`pairlab.adapters.quota.account`;
these tasks only wrap them.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from pairlab.adapters.backends.base import (
    EpisodeSpec,
    ExecutionBackend,
    PreparedEpisode,
    RunOutcome,
)
from pairlab.adapters.episode.session import CollectedEpisode, collect_episode, prepared
from pairlab.adapters.quota.account import QuotaBracket, quota_interval
from pairlab.adapters.run.directory import RunDir
from pairlab.core.schemas.catalog import TaskEntry
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.schemas.profile import RunnerProfile
from tasks.args import quoted
from tasks.retry import infra_task


@infra_task("prepare")
def prepare_episode(backend: ExecutionBackend, spec: EpisodeSpec) -> PreparedEpisode:
    return backend.prepare(spec)


@infra_task("teardown")
def teardown_episode(backend: ExecutionBackend, prepared: PreparedEpisode) -> None:
    backend.cleanup(prepared)


def prepared_in_tasks(
    backend: ExecutionBackend, spec: EpisodeSpec
) -> AbstractContextManager[PreparedEpisode]:
    """:func:`~pairlab.adapters.episode.session.prepared` with its prepare and cleanup
    run as the retried ``prepare`` and ``teardown`` tasks (arguments quoted)."""
    return prepared(
        backend,
        spec,
        prepare=lambda b, s: prepare_episode(quoted(b), quoted(s)),
        cleanup=lambda b, p: teardown_episode(quoted(b), quoted(p)),
    )


@task(name="run-agent", cache_policy=NO_CACHE, persist_result=False)
def run_episode(backend: ExecutionBackend, prepared: PreparedEpisode) -> RunOutcome:
    """The agent's run alone (the canary brackets it with its scheduled interval).
    Never retried: whatever the agent did is the data."""
    return backend.run(prepared)


@dataclass(frozen=True)
class MeasuredRun:
    """The agent's run and the quota bracket around it (snapshots right before and
    after, and whether anything else consumed the account in between)."""

    outcome: RunOutcome
    quota: QuotaBracket


@task(name="run-measured", cache_policy=NO_CACHE, persist_result=False)
def run_measured(
    backend: ExecutionBackend,
    prepared: PreparedEpisode,
    profile: RunnerProfile,
    account_dir: Path | None,
    asserted_concurrent_use: bool | None = None,
) -> MeasuredRun:
    """Snapshot quota, run the agent, snapshot quota again. Never retried: the run is the data.

    Concurrent use of the account during the run is assessed (ground truth where the
    account keeps a log, else ``asserted_concurrent_use``: the operator's assertion,
    None = unknown); :func:`pairlab.adapters.quota.account.quota_interval`."""
    with quota_interval(
        profile,
        account_dir,
        own_episode_ids={prepared.spec.episode_id},
        asserted_concurrent_use=asserted_concurrent_use,
    ) as bracket:
        outcome = backend.run(prepared)
    return MeasuredRun(outcome=outcome, quota=bracket)


@infra_task("collect-and-grade")
def collect_and_grade(
    backend: ExecutionBackend,
    prepared: PreparedEpisode,
    profile: RunnerProfile,
    task_entry: TaskEntry,
    outcome: RunOutcome,
    episode_dir: Path,
) -> CollectedEpisode:
    """:func:`~pairlab.adapters.episode.session.collect_episode` (idempotent: retried)."""
    return collect_episode(backend, prepared, profile, task_entry, outcome, episode_dir)


@infra_task("record")
def record_episode(run_dir: RunDir, record: EpisodeRecord) -> EpisodeRecord:
    run_dir.save_record(record)
    return record


__all__ = [
    "CollectedEpisode",
    "MeasuredRun",
    "collect_and_grade",
    "prepare_episode",
    "prepared_in_tasks",
    "record_episode",
    "run_episode",
    "run_measured",
    "teardown_episode",
]
