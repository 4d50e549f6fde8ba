"""The evidence-eval flow (DESIGN 2): plan, run pairs, aggregate, report, publish.

Arms of one pair run in their planned order, one after another; different pairs
run concurrently up to ``concurrency``. Completed episodes are persisted by
episode id, so re-running with the same ``run_id`` resumes without duplicates.
With ``budget_tokens`` the budget ceiling (pairlab/core/budget.py) is decided before
each pair; a run stopped by it reports and publishes what it did and ends Cancelled,
``budget-exhausted`` (a resume with a higher ceiling continues it).

The ``plan`` task stays in this module beside the flow it plans for: it reads the
flow's parameter model, and ``tasks`` may not import ``flows`` (the layers contract).
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State
from prefect.exceptions import TerminationSignal
from prefect.futures import PrefectFuture
from prefect.task_runners import ThreadPoolTaskRunner

from flows.evidence.budget_ceilings import budget_gate, check_account_budget, has_ceiling
from flows.evidence.dispatch import dispatch_pair
from flows.evidence.episode import EpisodeContext, execute_episode, run_pair
from flows.evidence.progress import PairProgress
from flows.evidence.quota_block import quota_interval_plan, run_quota_block, write_quota_intervals
from flows.evidence.resume import resume_text, settle_params
from flows.evidence.warm_harvest import harvest_graph
from flows.evidence.window import run_window
from flows.params import EvidenceEvalParams
from flows.run_ui import name_flow_run, show_budget_stop, show_interruption, show_refusal
from pairlab.adapters.episode.io import load_eval_inputs, sim_account_dir
from pairlab.adapters.episode.session import RunEnvironment, open_run_environment
from pairlab.adapters.interventions import load_intervention
from pairlab.adapters.recipe_validation import check_run_recipes
from pairlab.adapters.run.directory import RunDir
from pairlab.adapters.run.frozen_settings import write_frozen_settings
from pairlab.adapters.run.outputs import published_location, quota_provider
from pairlab.adapters.run.provider_limited import set_aside_limited_pairs
from pairlab.adapters.run.study_plan import freeze_plan
from pairlab.core.accounts import AccountStamp, refuse_credential_parameters
from pairlab.core.analysis.cohorts import resolve_gate
from pairlab.core.analysis.study_plan import ResolvedPlan
from pairlab.core.budget import BudgetStatus
from pairlab.core.errors import InvalidInputError
from pairlab.core.findings.warm_stratum import plan_warm_schedule
from pairlab.core.frozen_settings import check_nothing_dropped
from pairlab.core.intervention_wiring import (
    check_same_intervention,
    planned_arms,
    require_arms,
)
from pairlab.core.provider_limit import PROVIDER_LIMIT, PROVIDER_LIMITED_DIR
from pairlab.core.report.run import QuotaIntervalSettings, RunSettings, ScriptedModelUse
from pairlab.core.run_scope import RunScope
from pairlab.core.schedule import PlannedEpisode, Schedule, plan_schedule
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.schemas.intervention_manifest import DEFAULT_INTERVENTION
from pairlab.core.schemas.profile import RunnerProfile
from tasks.args import quoted
from tasks.report import aggregate_cohorts, publish_run_outputs, render_report, show_results

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


def open_environment(
    params: EvidenceEvalParams, profile: RunnerProfile, run_dir: RunDir
) -> RunEnvironment:
    """The run's backend, and its provider emulator (and Docker run network) when the
    profile runs against one; in work-pool mode each run-pair flow run opens its own
    (flows/evidence/run_pair.py)."""
    return open_run_environment(
        profile,
        backend_name=params.backend,
        run_id=run_dir.run_id,
        ledger_dir=run_dir.path / "emulator",
        settings=params.emulator,
        with_provider=params.dispatch.mode == "in-process",
        account=params.account,
    )


def run_settings(
    params: EvidenceEvalParams,
    profile: RunnerProfile,
    schedule: Schedule,
    gate: int,
    account: AccountStamp | None = None,
    budget: BudgetStatus | None = None,
) -> RunSettings:
    """``run.json`` of an evidence-eval run: its parameters as the report names them."""
    quota = schedule.quota_intervals
    return RunSettings(
        run_id=schedule.run_id,
        suite=params.suite,
        profile=params.profile,
        backend=params.backend,
        arms=list(params.arms),
        repetitions=params.repetitions,
        seed=schedule.seed,
        client=profile.client,
        include_transcript=params.include_transcript,
        gate=gate,
        quota_provider=quota_provider(profile),
        intervention=profile.intervention,
        account=account,
        budget=budget,
        scripted_model=scripted_model_use(profile, schedule, account),
        quota_intervals=None
        if quota is None
        else QuotaIntervalSettings(
            episodes_per_interval=quota.episodes_per_interval, interval_s=quota.interval_s
        ),
    )


def scripted_model_use(
    profile: RunnerProfile, schedule: Schedule, account: AccountStamp | None
) -> ScriptedModelUse | None:
    """Which planned tasks' treated episodes follow the intervention's usage recipe and
    which measure the floor, when the emulator's scripted model plays them (a profile
    on the emulator, no account); None otherwise."""
    stamp = profile.intervention
    if profile.endpoint != "emulator" or account is not None or stamp is None:
        return None
    tasks = sorted({e.task_id for e in schedule.entries})
    if stamp.id == DEFAULT_INTERVENTION:
        return ScriptedModelUse(builtin=True)
    return ScriptedModelUse(
        builtin=False,
        recipe_tasks=[t for t in tasks if t in stamp.recipes],
        floor_tasks=[t for t in tasks if t not in stamp.recipes],
    )


def submit_unit(
    unit: list[PlannedEpisode], ctx: EpisodeContext, schedule: Schedule, done: dict[str, Any]
) -> PrefectFuture[Any]:
    """Start one unit: a work-pool flow run (flows/evidence/dispatch.py), a block of quota
    intervals (flows/evidence/quota_block.py), or a pair in this flow."""
    if ctx.params.dispatch.mode == "work-pool":
        replanned = unit[0].pair_id in ctx.replanned
        return dispatch_pair.submit(
            unit, params=ctx.params, run_dir=ctx.run_dir, replanned=replanned
        )
    if schedule.quota_intervals is not None:
        return run_quota_block.submit(quoted(unit), quoted(ctx), quoted(done))
    return run_pair.submit(quoted(unit), quoted(ctx), quoted(done))


@flow(
    name="evidence-eval",
    # TaskRunner is invariant in its future type, so Prefect's own runner does not match
    # the decorator's TaskRunner[PrefectFuture[Any]] annotation.
    task_runner=ThreadPoolTaskRunner(max_workers=MAX_PAIR_WORKERS),  # type: ignore[arg-type]
    validate_parameters=True,
    log_prints=False,
)
def evidence_eval(params: EvidenceEvalParams) -> dict[str, Any] | State[Any]:
    """Run a paired, order-rotated 4-arm evaluation and publish its report.

    A run stopped at its budget ceiling returns Prefect's Cancelled state (message
    ``budget-exhausted: resume with Run Id X and a higher ceiling``, the result as its
    data): Cancelled, not Failed, because nothing went wrong and the run is resumable, as
    an interrupted run is; Failed would read as an error (and a work-pool pair that ends
    Failed is dispatched again)."""
    run_id = params.run_id or new_run_id()
    name_flow_run(run_id)  # the UI's run name is pairlab's run id
    try:
        result = _evaluate(params, run_id)
        if result.get("budget_exhausted"):
            return show_budget_stop(run_id, result)
        return result
    except InvalidInputError as exc:  # what only the flow can check: said on screen too
        show_refusal(run_id, exc)
        raise
    except (TerminationSignal, KeyboardInterrupt):  # SIGTERM (serve stopping) or Ctrl-C
        show_interruption(run_id, RunDir(Path(params.work_dir), run_id))
        raise


def _evaluate(params: EvidenceEvalParams, run_id: str) -> dict[str, Any]:
    # 0. A credential pasted into a parameter (the form) is refused before anything runs.
    refuse_credential_parameters(params.model_dump(mode="json"))
    run_dir = RunDir(Path(params.work_dir), run_id)
    # 1. A resume goes on with the run's frozen settings (a request that would change
    #    what the run measures is refused, resume-changed; flows/evidence/resume.py).
    params, resumed = settle_params(params, run_dir)
    check_account_budget(params)
    if params.account is not None and not has_ceiling(params):
        get_run_logger().warning(
            "run %s runs on account %r with NO BUDGET CEILING: nothing stops it before its "
            "plan is done; give one with --budget-tokens N (budget_tokens) or "
            "--budget-window-percent P (budget_window_percent) (docs/accounts.md)",
            run_id,
            params.account,
        )
    # 2. Plan: the suite's tasks (the warm harvest task runs once, before the strata).
    #    A pypi intervention is installed into its own environment here (cached).
    suite, profile = load_eval_inputs(
        params.suite, params.profile, params.intervention, backend_name=params.backend
    )
    #    No arms asked for: the baseline and every arm the intervention supports, resolved
    #    here once and frozen with the settings below (a resume has the run's arms already).
    params = params.model_copy(update={"arms": planned_arms(params.arms, profile.arm_args)})
    require_arms(profile, params.arms)
    task_ids = suite.select(params.task_filter)  # a task of another suite: refused
    if params.warm is not None:
        task_ids = [t for t in task_ids if t != params.warm.harvest_task]
    if profile.endpoint == "emulator" and params.account is None:
        # the scripted model follows usage recipes: checked against the server's real
        # tools/list before anything is pre-registered (adapters/recipe_validation)
        check_run_recipes(load_intervention(params.intervention), task_ids, params.arms)
    schedule = plan_task(params, run_id, task_ids)
    planned_ids = [e.episode_id for e in schedule.entries]
    recorded = run_dir.completed()
    check_nothing_dropped(run_id, recorded, planned_ids)
    check_same_intervention(run_id, recorded.values(), profile.intervention)
    # 3. Pre-register: settings and study plan frozen before the first episode (a resumed
    #    run whose plan changed is refused here, plan-changed), the schedule written.
    run_dir.ensure()
    write_frozen_settings(run_dir, params.model_dump(mode="json"))
    plan = freeze_plan(run_dir, params.suite, params.study_plan)
    run_dir.write_json("schedule.json", schedule.model_dump(mode="json"))
    #    A pair with a provider-limit episode is planned again whole (core/provider_limit.py).
    replanned = set_aside_limited_pairs(run_dir, schedule.entries)
    if replanned:
        get_run_logger().info(
            "run %s: %d pair(s) a provider limit ended are planned again: %s (the earlier "
            "attempts are kept in %s/)",
            run_id,
            len(replanned),
            ", ".join(sorted(replanned)),
            PROVIDER_LIMITED_DIR,
        )
    done = run_dir.completed()
    pending = [u for u in schedule.units() if any(e.episode_id not in done for e in u)]
    gate = resolve_gate(params.min_pairs, plan)
    # 4. The run's environment: backend, provider emulator, simulated account.
    env = open_environment(params, profile, run_dir)
    if env.account is not None and env.account.certification is not None:
        # the account's certify --account state, in run.json and the report's facts too;
        # shown, never a gate (DESIGN 4c)
        get_run_logger().info(
            "run %s on account %r: %s",
            run_id,
            env.account.name,
            env.account.certification.line(env.account.name),
        )
    account_dir = sim_account_dir(Path(params.work_dir), env.profile)
    ctx = EpisodeContext(params, suite, env, run_dir, account_dir, replanned=frozenset(replanned))
    scope = run_scope(params, env.profile, schedule, plan, gate)
    progress = PairProgress(run_id, len(planned_ids), done, pending, scope.labels())
    _log_plan(params, run_id, len(task_ids), len(planned_ids), schedule, done, plan, gate)
    _log_scope(run_id, scope)
    if (resumed_line := resume_text(run_id, resumed)) is not None:
        get_run_logger().info(resumed_line)
    budget = budget_gate(params, run_id, progress, env.profile, account_dir, run_dir)
    try:
        # 5. Claim 4's harvest session: one full-arm episode, its graph frozen and hashed.
        if params.warm is not None:
            graph = harvest_graph(
                params.warm.harvest_task,
                run_dir,
                lambda planned: execute_episode(planned, ctx, save=False),
            )
            ctx = replace(ctx, warm_graph=graph)
        # 6. The pairs (blocks of quota intervals), ``concurrency`` at a time.
        run_window(
            pending,
            params.concurrency,
            lambda unit: submit_unit(unit, ctx, schedule, done),
            on_done=progress.finished,
            on_error=progress.failed,
            on_start=progress.started,
            admit=None if budget is None else budget.admit,
        )
    finally:
        env.close()
    # 7. Aggregate, report, publish.
    ordered = [progress.records[e] for e in planned_ids if e in progress.records]
    write_quota_intervals(run_dir, schedule)
    analysis = aggregate_cohorts(quoted(ordered), run_id, params.min_pairs, plan)
    stopped = budget is not None and budget.stopped is not None
    status = (
        None
        if budget is None
        else BudgetStatus.of(
            ordered,
            ceiling_tokens=params.budget_tokens,
            stopped=stopped,
            episodes_planned=len(planned_ids),
            window=budget.window_status(),
        )
    )
    settings = run_settings(
        params,
        env.profile,
        schedule,
        int(analysis.get("gate", gate)),
        account=env.account,
        budget=status,
    )
    outputs = render_report(
        quoted(run_dir), quoted(ordered), planned_ids, quoted(analysis), quoted(settings)
    )
    manifest = publish_run_outputs(
        run_dir.path, params.store, params.on_secret, params.include_transcript
    )
    show_results(outputs["report_json"], params.store, run_id)
    below = bool(analysis.get("allBelowGate"))
    result = _finish(
        params, run_id, ordered, run_dir, manifest, gate < plan.plan.min_pairs, below, status
    )
    return result


def _log_plan(
    params: EvidenceEvalParams,
    run_id: str,
    tasks: int,
    episodes: int,
    schedule: Schedule,
    done: dict[str, EpisodeRecord],
    plan: ResolvedPlan,
    gate: int,
) -> None:
    logger = get_run_logger()
    logger.info(
        "run %s plan: suite %s, profile %s, backend %s, %d tasks x %d repetitions x arms %s "
        "= %d episodes in %d pairs (%d already complete), %d at a time; study plan %r "
        "(%s, sha256 %s, minimum %d pairs); gate %d pairs",
        run_id,
        params.suite,
        params.profile,
        params.backend,
        tasks,
        params.repetitions,
        ",".join(params.arms),
        episodes,
        len(schedule.units()),
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


def run_scope(
    params: EvidenceEvalParams,
    profile: RunnerProfile,
    schedule: Schedule,
    plan: ResolvedPlan,
    gate: int,
) -> RunScope:
    """What this run can answer (pairlab/core/run_scope.py), from its settings."""
    limit = params.dispatch.resolved_limit() if params.dispatch.mode == "work-pool" else None
    return RunScope(
        pairs_per_cohort=params.repetitions,
        gate=gate,
        plan_min_pairs=plan.plan.min_pairs,
        concurrency=params.concurrency,
        measures_quota=quota_provider(profile) is not None,
        one_account_at_a_time=schedule.quota_intervals is not None
        or (limit is not None and params.dispatch.episode_limit_slots == 1),
    )


def _log_scope(run_id: str, scope: RunScope) -> None:
    """What the run can answer, before its first episode (the exploratory line is the plan's)."""
    logger = get_run_logger()
    for line in scope.lines():
        if line.startswith("EXPLORATORY"):
            continue
        limited = line.startswith(("INSUFFICIENT", "subscription"))
        logger.log(logging.WARNING if limited else logging.INFO, "run %s: %s", run_id, line)


def _finish(
    params: EvidenceEvalParams,
    run_id: str,
    ordered: list[EpisodeRecord],
    run_dir: RunDir,
    manifest: dict[str, Any],
    exploratory: bool,
    all_below_gate: bool,
    budget: BudgetStatus | None = None,
) -> dict[str, Any]:
    """The flow's result, and its last two log lines (a run stopped at its budget ceiling:
    its last line is flows/run_ui.py's ``show_budget_stop``)."""
    stopped = budget is not None and budget.stopped_at_ceiling
    logger = get_run_logger()
    logger.info(
        "run %s published to %s (%d objects; report %s)",
        run_id,
        manifest["location"],
        manifest["objects"],
        published_location(params.store, run_id, "report.html"),
    )
    failed = sum(1 for r in ordered if not (r.success and r.correct))
    limited = [r.episode_id for r in ordered if r.excluded_reason == PROVIDER_LIMIT]
    logger.info(
        "run %s %s: %d episodes (%d failed or incorrect)%s",
        run_id,
        "stopped at its budget ceiling" if stopped else "complete",
        len(ordered),
        failed,
        ("; EXPLORATORY" if exploratory else "")
        + ("; NO COHORT REACHED THE GATE: nothing decided" if all_below_gate else "")
        + (
            f"; {len(limited)} ENDED BY A PROVIDER LIMIT (excluded; resume with run id "
            f"{run_id} to run their pairs again)"
            if limited
            else ""
        ),
    )
    return {
        "run_id": run_id,
        "store": params.store,
        "episodes": len(ordered),
        "failed": failed,
        "report": published_location(params.store, run_id, "report.md"),
        "report_html": published_location(params.store, run_id, "report.html"),
        "staging": str(run_dir.path),
        "published": manifest,
        "exploratory": exploratory,
        "all_below_gate": all_below_gate,
        "budget": None if budget is None else budget.to_json(),
        "budget_exhausted": stopped,
        "provider_limited": limited,
    }
