"""One planned episode of an eval, assembled from the lifecycle's parts, and the
``run-pair`` task that runs a pair's episodes in planned order.

:class:`EpisodeContext` is what every episode of the run shares (the flow's
parameters, the suite, the run environment, the run directory, the simulated
account, the warm stratum's frozen graph); it is built once by the flow and handed
down as one value.

The ``run-pair`` task stays in ``flows/`` (not ``tasks/``): it runs an episode
attempt (:mod:`flows.evidence.episode_attempt`, which holds the flow's dispatch
slot) with the flow's parameter model, and ``tasks`` may not import ``flows``
(the layers contract in pyproject.toml). The steps it calls are the tasks of
tasks/episode.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.evidence.episode_attempt import episode_attempt
from flows.params import EvidenceEvalParams
from pairlab.adapters.backends.base import ExecutionBackend
from pairlab.adapters.episode.build import episode_record, episode_spec
from pairlab.adapters.episode.session import RunEnvironment
from pairlab.adapters.run.directory import RunDir
from pairlab.adapters.run.provider import RunEndpoint
from pairlab.adapters.run.provider_limited import write_limit
from pairlab.core.emulator.run_settings import pair_seed
from pairlab.core.findings.warm_stratum import WARM
from pairlab.core.provider_limit import PROVIDER_LIMIT
from pairlab.core.schedule import PlannedEpisode
from pairlab.core.schemas.catalog import LoadedSuite
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.schemas.profile import RunnerProfile
from tasks.args import quoted
from tasks.episode import collect_and_grade, prepared_in_tasks, record_episode, run_measured


@dataclass(frozen=True)
class EpisodeContext:
    """What the episodes of one eval run share."""

    params: EvidenceEvalParams
    suite: LoadedSuite
    env: RunEnvironment
    run_dir: RunDir
    account_dir: Path | None
    warm_graph: Path | None = None  # the warm stratum's frozen graph (claim 4)
    # pairs a resume planned again after a provider limit (core/provider_limit.py)
    replanned: frozenset[str] = frozenset()

    @property
    def backend(self) -> ExecutionBackend:
        return self.env.backend

    @property
    def profile(self) -> RunnerProfile:
        return self.env.profile

    @property
    def provider(self) -> RunEndpoint | None:
        return self.env.provider


def execute_episode(
    planned: PlannedEpisode, ctx: EpisodeContext, *, save: bool = True
) -> EpisodeRecord:
    """Register, prepare, run between quota snapshots, collect and grade, tear down,
    check the emulator's ground truth, build the record (and save it unless ``save``
    is False: the warm harvest keeps its own).

    Five task runs: prepare, run-measured, collect-and-grade, teardown, record. The
    arguments are quoted: Prefect would otherwise walk them looking for futures on
    every call (about half of a task run's overhead; bench/README.md, Orchestration)."""
    params, entry = ctx.params, ctx.suite.task(planned.task_id)
    registered = ctx.env.register(
        episode_id=planned.episode_id,
        task_id=planned.task_id,
        arm=planned.arm,
        repetition=planned.repetition,
        seed=pair_seed(params.seed, planned.task_id, planned.repetition),
        replanned=planned.pair_id in ctx.replanned,
    )
    spec = episode_spec(
        planned,
        run_id=ctx.run_dir.run_id,
        suite=ctx.suite,
        entry=entry,
        profile=ctx.profile,
        model=params.model,
        seed=params.seed,
        keep_workspace=params.keep_workspaces,
        account_dir=ctx.account_dir,
        endpoint_url=registered.url if registered is not None else None,
        holdout_share=params.holdout_share,
        carried_graph=ctx.warm_graph if planned.stratum == WARM else None,
    )
    episode_dir = ctx.run_dir.episode_dir(planned.episode_id)
    q_backend, q_profile = quoted(ctx.backend), quoted(ctx.profile)
    with prepared_in_tasks(ctx.backend, spec) as prepared:
        q_prepared = quoted(prepared)
        measured = run_measured(
            q_backend, q_prepared, q_profile, ctx.account_dir, params.unrelated_concurrent_use
        )
        collected = collect_and_grade(
            q_backend,
            q_prepared,
            profile=q_profile,
            task_entry=quoted(entry),
            outcome=quoted(measured.outcome),
            episode_dir=episode_dir,
        )
    # on an account: a rejected credential or an unreachable provider stops the run, nothing
    # recorded for the episode
    ctx.env.stop_on_account_failure(measured.outcome.stdout, collected.usage.vector)
    check = ctx.env.check_episode(
        registered, episode_dir, reader=collected.usage.vector, stdout=measured.outcome.stdout
    )
    limit = ctx.env.provider_limit(registered, measured.outcome.stdout)
    if limit is not None:  # excluded, its pair re-planned on resume (core/provider_limit.py)
        write_limit(episode_dir, limit)
        get_run_logger().warning(
            "episode %s: %s (%s said: %s); excluded as provider-limit, its pair is planned "
            "again on resume",
            planned.episode_id,
            limit.kind,
            "the emulator's ledger" if limit.source == "emulator-ledger" else ctx.profile.client,
            limit.message,
        )
    if check is not None and not check.agrees:  # the emulator's ground truth
        get_run_logger().warning(
            "episode %s: usage differs from the emulator's ground truth (%s)",
            planned.episode_id,
            episode_dir / "emulator.json",
        )
    intervention = ctx.env.check_intervention(
        registered,
        arm=planned.arm,
        stdout=measured.outcome.stdout,
        stderr=measured.outcome.stderr,
        files=collected.files,
        stdout_truncated=measured.outcome.stdout_truncated,
    )
    if intervention is not None and intervention.is_fault:  # recorded, excluded; the run goes on
        get_run_logger().warning(
            "episode %s: %s (%s)", planned.episode_id, intervention.status, intervention.detail
        )
    record = episode_record(
        planned,
        run_id=ctx.run_dir.run_id,
        suite=ctx.suite,
        entry=entry,
        profile=ctx.profile,
        backend_name=ctx.backend.name,
        requested_model=params.model,
        outcome=measured.outcome,
        collected=collected,
        quota=measured.quota,
        include_transcript=params.include_transcript,
        intervention=intervention,
        limited=limit is not None,
    )
    return record_episode(quoted(ctx.run_dir), quoted(record)) if save else record


def attempt_episode(planned: PlannedEpisode, ctx: EpisodeContext) -> EpisodeRecord:
    """One episode inside its attempt (the dispatch slot, an interrupted attempt's
    leftovers cleared, the execution log: flows/evidence/episode_attempt.py)."""
    with episode_attempt(ctx.params.dispatch, ctx.run_dir, planned.episode_id):
        return execute_episode(planned, ctx)


@task(name="run-pair", cache_policy=NO_CACHE, persist_result=False)
def run_pair(
    pair: list[PlannedEpisode], ctx: EpisodeContext, done: dict[str, EpisodeRecord]
) -> list[EpisodeRecord]:
    """Run the episodes of one pair strictly in their planned order (those in ``done``,
    recorded by an earlier attempt, are not run again). After an episode a provider's
    limit ended, the rest of the pair is not run: the pair is planned again as a whole on
    resume (core/provider_limit.py)."""
    records = []
    for planned in pair:
        record = done.get(planned.episode_id) or attempt_episode(planned, ctx)
        records.append(record)
        if record.excluded_reason == PROVIDER_LIMIT:
            break
    return records


__all__ = ["EpisodeContext", "attempt_episode", "execute_episode", "run_pair"]
