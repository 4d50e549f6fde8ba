"""Tasks for one episode: prepare, run (between quota snapshots), collect and grade,
teardown, record.

Each task is one Prefect task run, so each costs a round of state events
(bench/README.md, Orchestration). Steps that are cheap and never retried on
their own are folded into the task they belong to: the quota snapshots into
the run they bracket, usage, ledger and grading into the collection whose files
they read. Retries still follow the rule of DESIGN 2: infrastructure steps are
retried, the agent's run never is."""

from __future__ import annotations

from dataclasses import dataclass
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
from pairlab.adapters.episode.finding_evidence import read_episode_evidence
from pairlab.adapters.episode.grading import grade
from pairlab.adapters.episode.io import (
    EpisodeUsage,
    assess_concurrent_use,
    concurrency_mark,
    extract_final_answer,
    ingest_ledger,
    read_episode_usage,
    snapshot_quota,
    usage_files,
)
from pairlab.adapters.run.directory import RunDir
from pairlab.core.findings.evidence import EpisodeEvidence
from pairlab.core.quota.consumption import UNKNOWN_CONCURRENT_USE, ConcurrentUse
from pairlab.core.schemas.catalog import TaskEntry
from pairlab.core.schemas.episode import EpisodeRecord, GraderCheck
from pairlab.core.schemas.profile import RunnerProfile
from pairlab.core.schemas.quota import QuotaObservation
from tasks.retry import infra_task


@infra_task("prepare")
def prepare_episode(backend: ExecutionBackend, spec: EpisodeSpec) -> PreparedEpisode:
    return backend.prepare(spec)


@task(name="quota-snapshot", cache_policy=NO_CACHE, persist_result=False)
def quota_snapshot(profile: RunnerProfile, account_dir: Path | None) -> list[QuotaObservation]:
    return snapshot_quota(profile, account_dir)


@task(name="run", cache_policy=NO_CACHE, persist_result=False)
def run_episode(backend: ExecutionBackend, prepared: PreparedEpisode) -> RunOutcome:
    # Never retried: whatever the agent did is the data.
    return backend.run(prepared)


@dataclass(frozen=True)
class MeasuredRun:
    """The agent's run, the quota snapshots taken right before and after it, and whether
    anything else consumed the account in between."""

    quota_before: list[QuotaObservation]
    outcome: RunOutcome
    quota_after: list[QuotaObservation]
    concurrent_use: ConcurrentUse = UNKNOWN_CONCURRENT_USE


@task(name="run", cache_policy=NO_CACHE, persist_result=False)
def run_measured(
    backend: ExecutionBackend,
    prepared: PreparedEpisode,
    profile: RunnerProfile,
    account_dir: Path | None,
    asserted_concurrent_use: bool | None = None,
) -> MeasuredRun:
    """Snapshot quota, run the agent, snapshot quota again. Never retried: the run is the data.

    The account's charge counter is read around the snapshots, so concurrent use of
    the account during the interval is assessed (ground truth where the account keeps a
    log, else ``asserted_concurrent_use``: the operator's assertion, None = unknown)."""
    start = concurrency_mark(profile, account_dir)
    before = snapshot_quota(profile, account_dir)
    outcome = backend.run(prepared)
    after = snapshot_quota(profile, account_dir)
    end = concurrency_mark(profile, account_dir)
    concurrent = assess_concurrent_use(
        profile, account_dir, (start, end), {prepared.spec.episode_id}, asserted_concurrent_use
    )
    return MeasuredRun(
        quota_before=before, outcome=outcome, quota_after=after, concurrent_use=concurrent
    )


@dataclass(frozen=True)
class CollectedEpisode:
    files: CollectedFiles
    usage: EpisodeUsage
    ledger: dict[str, int | None] | None
    checks: list[GraderCheck]
    evidence: EpisodeEvidence | None = None  # the intervention's finding evidence and join


@infra_task("collect-and-grade")
def collect_and_grade(
    backend: ExecutionBackend,
    prepared: PreparedEpisode,
    profile: RunnerProfile,
    task_entry: TaskEntry,
    outcome: RunOutcome,
    episode_dir: Path,
) -> CollectedEpisode:
    """Copy the episode's files out, read its provider-native usage, ingest its MCP
    ledger rows, grade its workspace and final answer.

    Every step is idempotent (collection overwrites, ledger rows are keyed, grading
    reads), so the whole task is retried on an infrastructure error."""
    files = backend.collect(prepared, episode_dir / "collected")
    usage = read_episode_usage(profile, files)
    ledger = ingest_ledger(files, episode_dir)
    delivered = ledger.get("observed_returned_tokens") if ledger else None
    final_answer = extract_final_answer(outcome.stdout, profile.client)
    checks = grade(backend, prepared, task_entry, final_answer, delivered)
    evidence = read_episode_evidence(files, usage_files(profile, files))
    return CollectedEpisode(
        files=files, usage=usage, ledger=ledger, checks=checks, evidence=evidence
    )


@infra_task("record")
def record_episode(run_dir: RunDir, record: EpisodeRecord) -> EpisodeRecord:
    run_dir.save_record(record)
    return record


@infra_task("teardown")
def teardown_episode(backend: ExecutionBackend, prepared: PreparedEpisode) -> None:
    backend.cleanup(prepared)


__all__ = [
    "CollectedEpisode",
    "MeasuredRun",
    "collect_and_grade",
    "prepare_episode",
    "quota_snapshot",
    "record_episode",
    "run_episode",
    "run_measured",
    "teardown_episode",
]
