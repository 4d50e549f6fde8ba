"""The steps after an agent run that every flow takes the same way: collect the
episode's files, read its provider-native usage, ingest its MCP ledger rows and
grade its workspace and final answer (each a Prefect task)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefect.utilities.annotations import quote

from pairlab.adapters.backends.base import ExecutionBackend, PreparedEpisode, RunOutcome
from pairlab.adapters.episode_io import EpisodeUsage, extract_final_answer
from pairlab.core.schemas.catalog import TaskEntry
from pairlab.core.schemas.episode import GraderCheck
from pairlab.core.schemas.profile import RunnerProfile
from tasks.episode import collect_episode, collect_ledger, collect_usage, grade_episode


@dataclass(frozen=True)
class CollectedEpisode:
    usage: EpisodeUsage
    ledger: dict[str, int | None] | None
    checks: list[GraderCheck]


def collect_and_grade(
    backend: ExecutionBackend,
    prepared: PreparedEpisode,
    *,
    profile: RunnerProfile,
    task_entry: TaskEntry,
    outcome: RunOutcome,
    episode_dir: Path,
) -> CollectedEpisode:
    # quote(): Prefect would otherwise walk these objects for futures on every call.
    q_backend, q_prepared = quote(backend), quote(prepared)
    collected = collect_episode(q_backend, q_prepared, episode_dir / "collected")
    usage = collect_usage(quote(profile), collected.dest)
    ledger = collect_ledger(collected.dest, episode_dir)
    final_answer = extract_final_answer(outcome.stdout)
    delivered = ledger.get("observed_returned_tokens") if ledger else None
    checks = grade_episode(q_backend, q_prepared, quote(task_entry), final_answer, delivered)
    return CollectedEpisode(usage=usage, ledger=ledger, checks=checks)
