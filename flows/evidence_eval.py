"""The evidence-eval flow (DESIGN 2): plan, run pairs, aggregate, report, publish.

Arms of one pair run in their planned order, one after another; different pairs
run concurrently up to ``concurrency``. Completed episodes are persisted by
episode id, so re-running with the same ``run_id`` resumes without duplicates.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import update_progress_artifact
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectConcurrentFuture, PrefectFuture
from prefect.task_runners import ThreadPoolTaskRunner

from flows.evidence.dispatch import dispatch_pair
from flows.evidence.episode_attempt import episode_attempt
from flows.evidence.quota_block import quota_interval_plan, run_quota_block, write_quota_intervals
from flows.evidence.warm_harvest import harvest_graph
from flows.params import EvidenceEvalParams
from flows.run_ui import failure_reason, name_flow_run, pair_text
from pairlab.adapters.backends.base import ExecutionBackend
from pairlab.adapters.backends.factory import make_backend
from pairlab.adapters.episode.build import episode_record, episode_spec
from pairlab.adapters.episode.io import (
    load_eval_inputs,
    sim_account_dir,
)
from pairlab.adapters.run import progress_events
from pairlab.adapters.run.directory import RunDir
from pairlab.adapters.run.outputs import published_location
from pairlab.adapters.run.provider import RunEndpoint, open_run_endpoint
from pairlab.adapters.run.study_plan import freeze_plan
from pairlab.core.analysis.cohorts import resolve_gate
from pairlab.core.emulator.run_settings import pair_seed
from pairlab.core.findings.warm_stratum import WARM, plan_warm_schedule
from pairlab.core.schedule import PlannedEpisode, Schedule, plan_schedule
from pairlab.core.schemas.catalog import LoadedSuite
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.schemas.profile import RunnerProfile
from tasks.args import quoted
from tasks.episode import (
    collect_and_grade,
    prepare_episode,
    record_episode,
    run_measured,
    teardown_episode,
)
from tasks.report import (
    aggregate_cohorts,
    progress_artifact,
    publish_run_outputs,
    render_report,
    show_results,
)

MAX_PAIR_WORKERS = 32


def new_run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


@task(name="plan", cache_policy=NO_CACHE, persist_result=False)
def plan_task(params: EvidenceEvalParams, run_id: str, task_ids: list[str]) -> Schedule:
    if params.warm is not None:  # claim 4: cold and warm strata planned together
        return plan_warm_schedule(
            task_ids, list(params.arms), params.repetitions, params.seed, run_id
        )
    return plan_schedule(
        task_ids,
        list(params.arms),
        params.repetitions,
        params.seed,
        run_id,
        quota_intervals=quota_interval_plan(params),
    )


def _execute_one(
    planned: PlannedEpisode,
    *,
    params: EvidenceEvalParams,
    suite: LoadedSuite,
    profile: RunnerProfile,
    backend: ExecutionBackend,
    run_dir: RunDir,
    account_dir: Path | None,
    endpoint: RunEndpoint | None = None,
    warm_graph: Path | None = None,
    save: bool = True,
) -> EpisodeRecord:
    task_entry = suite.task(planned.task_id)
    registered = (
        endpoint.register(
            episode_id=planned.episode_id,
            task_id=planned.task_id,
            arm=planned.arm,
            repetition=planned.repetition,
            seed=pair_seed(params.seed, planned.task_id, planned.repetition),
        )
        if endpoint is not None
        else None
    )
    spec = episode_spec(
        planned,
        run_id=run_dir.run_id,
        suite=suite,
        entry=task_entry,
        profile=profile,
        model=params.model,
        seed=params.seed,
        keep_workspace=params.keep_workspaces,
        account_dir=account_dir,
        endpoint_url=registered.url if registered is not None else None,
        holdout_share=params.holdout_share,
        carried_graph=warm_graph if planned.stratum == WARM else None,
    )
    episode_dir = run_dir.episode_dir(planned.episode_id)
    # quoted(): Prefect would otherwise walk these objects looking for futures on every
    # call (about half of a task run's overhead; bench/README.md, Orchestration).
    # Five task runs per episode: prepare, run (between its quota snapshots),
    # collect-and-grade, teardown, record (tasks/episode.py).
    q_backend, q_profile = quoted(backend), quoted(profile)
    prepared = prepare_episode(q_backend, quoted(spec))
    q_prepared = quoted(prepared)
    try:
        measured = run_measured(
            q_backend, q_prepared, q_profile, account_dir, params.unrelated_concurrent_use
        )
        collected = collect_and_grade(
            q_backend,
            q_prepared,
            profile=q_profile,
            task_entry=quoted(task_entry),
            outcome=quoted(measured.outcome),
            episode_dir=episode_dir,
        )
    finally:
        teardown_episode(q_backend, q_prepared)
    if endpoint is not None and registered is not None:  # the emulator's ground truth
        check = endpoint.check_episode(
            registered,
            episode_dir,
            client=profile.client,
            reader=collected.usage.vector,
            stdout=measured.outcome.stdout,
        )
        if not check.agrees:
            get_run_logger().warning(
                "episode %s: usage differs from the emulator's ground truth (%s)",
                planned.episode_id,
                episode_dir / "emulator.json",
            )
    record = episode_record(
        planned,
        run_id=run_dir.run_id,
        stratum=planned.stratum,
        suite=suite,
        entry=task_entry,
        profile=profile,
        backend_name=backend.name,
        requested_model=params.model,
        outcome=measured.outcome,
        usage=collected.usage,
        checks=collected.checks,
        quota_before=measured.quota_before,
        quota_after=measured.quota_after,
        ledger=collected.ledger,
        include_transcript=params.include_transcript,
        concurrent_use=measured.concurrent_use,
        evidence=collected.evidence,
    )
    if not save:
        return record
    return record_episode(quoted(run_dir), quoted(record))


def _attempt_one(planned: PlannedEpisode, **context: Any) -> EpisodeRecord:
    """One episode inside its attempt (slot, interrupted-attempt cleanup), as run_pair does."""
    with episode_attempt(context["params"].dispatch, context["run_dir"], planned.episode_id):
        return _execute_one(planned, **context)


@task(name="run-pair", cache_policy=NO_CACHE, persist_result=False)
def run_pair(
    pair: list[PlannedEpisode],
    *,
    params: EvidenceEvalParams,
    suite: LoadedSuite,
    profile: RunnerProfile,
    backend: ExecutionBackend,
    run_dir: RunDir,
    account_dir: Path | None,
    done: dict[str, EpisodeRecord],
    endpoint: RunEndpoint | None = None,
    warm_graph: Path | None = None,
) -> list[EpisodeRecord]:
    """Run the episodes of one pair strictly in their planned order."""
    records = []
    for planned in pair:
        if planned.episode_id in done:
            records.append(done[planned.episode_id])
            continue
        with episode_attempt(
            params.dispatch, run_dir, planned.episode_id
        ):  # flows/evidence/episode_attempt.py
            records.append(
                _execute_one(
                    planned,
                    params=params,
                    suite=suite,
                    profile=profile,
                    backend=backend,
                    run_dir=run_dir,
                    account_dir=account_dir,
                    endpoint=endpoint,
                    warm_graph=warm_graph,
                )
            )
    return records


def open_endpoint(
    params: EvidenceEvalParams, profile: RunnerProfile, run_dir: RunDir, run_id: str
) -> RunEndpoint | None:
    """The run's provider emulator (and Docker run network), for ``endpoint: emulator``."""
    if profile.endpoint != "emulator" or params.dispatch.mode != "in-process":
        return None  # work-pool: each run-pair flow run opens its own (flows/evidence/run_pair.py)
    return open_run_endpoint(
        profile,
        run_id=run_id,
        backend_name=params.backend,
        ledger_dir=run_dir.path / "emulator",
        settings=params.emulator,
    )


@flow(
    name="evidence-eval",
    # TaskRunner is invariant in its future type, so Prefect's own runner does not match
    # the decorator's TaskRunner[PrefectFuture[Any]] annotation.
    task_runner=ThreadPoolTaskRunner(max_workers=MAX_PAIR_WORKERS),  # type: ignore[arg-type]
    validate_parameters=True,
    log_prints=False,
)
def evidence_eval(params: EvidenceEvalParams) -> dict[str, Any]:
    """Run a paired, order-rotated 4-arm evaluation and publish its report."""
    logger = get_run_logger()
    run_id = params.run_id or new_run_id()
    name_flow_run(run_id)  # the UI's run name is pairlab's run id
    suite, profile = load_eval_inputs(params.suite, params.profile)
    task_ids = [t.id for t in suite.tasks if not params.task_filter or t.id in params.task_filter]
    if params.warm is not None:  # the harvest task runs once, before the strata
        task_ids = [t for t in task_ids if t != params.warm.harvest_task]
    schedule = plan_task(params, run_id, task_ids)
    run_dir = RunDir(Path(params.work_dir), run_id).ensure()
    # Pre-registration: frozen before the first episode; a resumed run whose plan
    # changed is refused here (plan-changed), before anything runs.
    plan = freeze_plan(run_dir, params.suite, params.study_plan)
    run_dir.write_json("schedule.json", schedule.model_dump(mode="json"))
    planned_ids = [e.episode_id for e in schedule.entries]
    planned = set(planned_ids)
    done = {k: v for k, v in run_dir.completed().items() if k in planned}
    # the provider emulator (and Docker run network) when the profile runs against it
    endpoint = open_endpoint(params, profile, run_dir, run_id)
    backend = endpoint.backend if endpoint else make_backend(params.backend, run_id=run_id)
    profile = endpoint.profile if endpoint else profile
    account_dir = sim_account_dir(Path(params.work_dir), profile)

    prog = progress_events.Progress(total=len(planned_ids), skipped=len(done))
    artifact_id = progress_artifact(prog.percent(), _progress_text(run_id, prog))
    units = schedule.units()  # pairs; blocks of quota intervals in quota-aware plans
    pending = [p for p in units if any(e.episode_id not in done for e in p)]
    gate = resolve_gate(params.min_pairs, plan)
    logger.info(
        "run %s plan: suite %s, profile %s, backend %s, %d tasks x %d repetitions x arms %s "
        "= %d episodes in %d pairs (%d already complete), %d at a time; study plan %r "
        "(%s, sha256 %s, minimum %d pairs); gate %d pairs",
        run_id,
        params.suite,
        params.profile,
        params.backend,
        len(task_ids),
        params.repetitions,
        ",".join(params.arms),
        len(planned_ids),
        len(units),
        len(done),
        params.concurrency,
        plan.plan.id,
        plan.source,
        plan.sha256[:12],
        plan.plan.min_pairs,
        gate,
    )
    if gate < plan.plan.min_pairs:
        logger.warning(
            "run %s is EXPLORATORY: gate %d pairs is below the study plan's minimum of %d; "
            "effects with fewer pairs are not wins",
            run_id,
            gate,
            plan.plan.min_pairs,
        )
    progress_events.notify(prog)

    warm_graph = None
    if params.warm is not None:  # claim 4: the harvest session, its graph frozen and hashed
        warm_graph = harvest_graph(
            params.warm.harvest_task,
            run_dir,
            functools.partial(
                _execute_one,
                params=params,
                suite=suite,
                profile=profile,
                backend=backend,
                run_dir=run_dir,
                account_dir=account_dir,
                endpoint=endpoint,
                save=False,
            ),
        )
    pair_no = {id(p): i + 1 for i, p in enumerate(pending)}
    records: dict[str, EpisodeRecord] = dict(done)
    window = params.concurrency
    running: dict[concurrent.futures.Future[Any], PrefectConcurrentFuture[Any]] = {}

    started: dict[concurrent.futures.Future[Any], list[PlannedEpisode]] = {}

    def track(fut: PrefectFuture[Any], pair: list[PlannedEpisode]) -> None:
        # The flow's ThreadPoolTaskRunner makes concurrent futures, which can be waited on.
        assert isinstance(fut, PrefectConcurrentFuture), type(fut)
        running[fut.wrapped_future] = fut
        started[fut.wrapped_future] = pair

    def submit(pair: list[PlannedEpisode]) -> None:
        logger.info("pair %d/%d start: %s", pair_no[id(pair)], len(pending), pair_text(pair))
        if params.dispatch.mode == "work-pool":  # scale-out: flows/evidence/dispatch.py
            track(dispatch_pair.submit(pair, params=params, run_dir=run_dir), pair)
            return
        if schedule.quota_intervals is not None:  # flows/evidence/quota_block.py
            execute = functools.partial(
                _attempt_one,
                params=params,
                suite=suite,
                profile=profile,
                backend=backend,
                run_dir=run_dir,
                account_dir=account_dir,
                endpoint=endpoint,
            )
            track(
                run_quota_block.submit(
                    quoted(pair),
                    params=quoted(params),
                    profile=quoted(profile),
                    run_dir=quoted(run_dir),
                    account_dir=account_dir,
                    done=quoted(done),
                    execute=quoted(execute),
                ),
                pair,
            )
            return
        fut = run_pair.submit(
            quoted(pair),
            params=quoted(params),
            suite=quoted(suite),
            profile=quoted(profile),
            backend=quoted(backend),
            run_dir=quoted(run_dir),
            account_dir=account_dir,
            done=quoted(done),
            endpoint=quoted(endpoint),
            warm_graph=warm_graph,
        )
        track(fut, pair)

    queue = list(pending)
    try:
        while queue or running:
            while queue and len(running) < window:
                submit(queue.pop(0))
            finished, _ = concurrent.futures.wait(
                list(running), return_when=concurrent.futures.FIRST_COMPLETED
            )
            for raw in finished:
                fut = running.pop(raw)
                pair = started.pop(raw)
                try:
                    pair_records = fut.result()
                except Exception as exc:
                    logger.error(
                        "pair %d/%d failed: %s: %s: %s",
                        pair_no[id(pair)],
                        len(pending),
                        pair_text(pair),
                        type(exc).__name__,
                        exc,
                    )
                    raise
                for rec in pair_records:
                    if rec.episode_id not in records:
                        records[rec.episode_id] = rec
                        prog.done += 1
                        why = failure_reason(rec)
                        if why is not None:
                            prog.failed += 1
                            # an incorrect answer is data (INFO: the Logs tab, not the
                            # console); a run that failed or was excluded is a warning
                            logger.log(
                                logging.INFO
                                if rec.success and not (rec.excluded or rec.timed_out)
                                else logging.WARNING,
                                "episode %s (%s, %s, rep %s) failed: %s",
                                rec.episode_id,
                                rec.task_id,
                                rec.arm,
                                None if rec.repetition is None else rec.repetition + 1,
                                why,
                            )
                logger.info(
                    "pair %d/%d end: %s; %d/%d episodes done, %d failed",
                    pair_no[id(pair)],
                    len(pending),
                    pair_text(pair),
                    prog.done + prog.skipped,
                    prog.total,
                    prog.failed,
                )
                update_progress_artifact(
                    artifact_id=artifact_id,
                    progress=prog.percent(),
                    description=_progress_text(run_id, prog),
                )
                progress_events.notify(prog)
    finally:
        if endpoint is not None:
            concurrent.futures.wait(list(running))  # never stop the emulator under an episode
            endpoint.close()

    ordered = [records[e] for e in planned_ids if e in records]
    write_quota_intervals(run_dir, schedule)
    analysis = aggregate_cohorts(quoted(ordered), run_id, params.min_pairs, plan)
    outputs = render_report(
        quoted(run_dir),
        quoted(ordered),
        planned_ids,
        quoted(analysis),
        quoted(params),
        quoted(profile),
        quoted(schedule),
    )
    manifest = publish_run_outputs(
        run_dir.path, params.store, params.on_secret, params.include_transcript
    )
    logger.info(
        "run %s published to %s (%d objects; report %s)",
        run_id,
        manifest["location"],
        manifest["objects"],
        published_location(params.store, run_id, "report.html"),
    )
    show_results(outputs["report_json"], params.store, run_id)
    failed = sum(1 for r in ordered if not (r.success and r.correct))
    result = {
        "run_id": run_id,
        "store": params.store,
        "episodes": len(ordered),
        "failed": failed,
        "report": published_location(params.store, run_id, "report.md"),
        "report_html": published_location(params.store, run_id, "report.html"),
        "staging": str(run_dir.path),
        "published": manifest,
        "exploratory": gate < plan.plan.min_pairs,
    }
    logger.info(
        "run %s complete: %d episodes (%d failed or incorrect)%s",
        run_id,
        len(ordered),
        failed,
        "; EXPLORATORY" if result["exploratory"] else "",
    )
    return result


def _progress_text(run_id: str, prog: progress_events.Progress) -> str:
    """The progress card's line: done/total in words (the card shows no bar)."""
    finished = prog.done + prog.skipped
    text = f"{finished}/{prog.total} episodes ({prog.percent():.0f}%) of run {run_id}"
    if prog.skipped:
        text += f", {prog.skipped} from an earlier attempt"
    return text + (f"; {prog.failed} failed or incorrect" if prog.failed else "")
