"""The canary-trial flow (DESIGN 9): freeze, pause for approval, run interleaved, judge, publish.

1. Freeze the trial manifest (fixtures and digests, source revision, environment,
   acceptance contract, required checks, review dimensions, assignments, the two
   revisions and the one intervention) to ``trials/manifest.json`` and show it,
   with the planned episodes and the expected budget, as a markdown artifact.
2. Pause for a typed :class:`CanaryApproval`. Nothing runs before approval; a
   rejection or a timeout ends the run with zero episodes and says why
   (``trials/approval.json``, the return value and a markdown artifact).
3. Run the cold and warm strata (never combined) with baseline/candidate
   alternating AB/BA per repetition, one episode at a time on a private
   simulated account. Each run gets a quota interval of exactly
   ``quota_interval_s`` scheduled seconds: "before" snapshot, run, collect and
   grade, then wait until the interval's end and take the "after" snapshot, so
   baseline and candidate intervals have equal durations. An overrun is recorded
   and makes that pair's quota comparison inconclusive, honestly.
4. Write the version-1 comparison artifact (``trials/artifact.json``), judge it
   (``trials/verdict.json`` + markdown) and publish the run with the approval record.

Warm start, for the simulator: the episode's graph dir starts pre-seeded with a
warm-start file (local backend) and ``PAIRLAB_STRATUM=warm`` is set (every
backend); the simulator's baseline/candidate token draws do not read the
graph, so the strata differ in state, not in expected tokens. A real client's
warm stratum is the same hook: state present before the run.

The evaluator never kills, switches or rolls back anything; it reports.
"""

from __future__ import annotations

import json
import secrets
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.exceptions import FlowPauseTimeout
from prefect.flow_runs import pause_flow_run
from prefect.input import RunInput
from pydantic import ConfigDict, Field, model_validator

from flows.params import CanaryTrialParams
from pairlab.adapters.backends.base import ExecutionBackend, make_backend
from pairlab.adapters.episode_build import episode_record, episode_spec
from pairlab.adapters.episode_io import load_eval_inputs
from pairlab.adapters.rundir import RunDir, safe_name
from pairlab.adapters.trial_inputs import (
    contract_digest,
    open_sim_account,
    source_revision,
    tree_digest,
)
from pairlab.core.canary import (
    ArmRevision,
    Assignment,
    Budget,
    CheckResult,
    FrozenFixture,
    PlannedRun,
    RunEvidence,
    TrialManifest,
    build_artifact,
    to_identifier,
)
from pairlab.core.plan import PlannedEpisode, Schedule, plan_canary
from pairlab.core.schemas.catalog import LoadedSuite
from pairlab.core.schemas.profile import RunnerProfile
from pairlab.core.verdict import judge_file, render_text
from tasks.args import quoted
from tasks.episode import (
    collect_and_grade,
    prepare_episode,
    quota_snapshot,
    record_episode,
    run_episode,
    teardown_episode,
)
from tasks.report import artifact_key, publish_run_outputs

TRIALS = "trials"
WARM_SEED_FILE = "pairlab-warm-start.json"
STRATA_MEANING = {
    "cold": "fresh HOME, workspace and empty graph dir; PAIRLAB_STRATUM=cold",
    "warm": (
        "fresh HOME and workspace; graph dir pre-seeded with a warm-start file (local backend) "
        "and PAIRLAB_STRATUM=warm"
    ),
}
# The simulator's usage-model overrides shared by both arms of a trial: low noise so a
# whole-percent quota (precision 1.0) can resolve the difference between revisions.
SIM_TRIAL_NOISE: dict[str, Any] = {
    "base": {"task_factor_sigma": 0.1},
    "noise": {"episode_sigma": 0.05, "dimension_sigma": 0.05},
}
# Client format -> the provider the comparison artifact names (token vectors exist
# only for claude and codex; other providers carry quota and quality evidence only).
PROVIDER_OF_READER = {"claude": "claude", "codex": "codex", "gemini": "gemini"}


class CanaryApproval(RunInput):
    """Approve or reject a paused canary trial (the Resume form in the Prefect UI)."""

    model_config = ConfigDict(
        extra="forbid",
        # Enforced by the server on resume (it validates with the JSON schema):
        # approving requires the budget acknowledgement.
        json_schema_extra={
            "if": {"properties": {"approve": {"const": True}}, "required": ["approve"]},
            "then": {
                "properties": {"budget_acknowledged": {"const": True}},
                "required": ["budget_acknowledged"],
            },
        },
    )

    approve: bool = Field(description="Run the trial (false = reject; nothing runs)")
    approver: str = Field(
        min_length=1, max_length=200, pattern=r"\S", description="Who decides (recorded)"
    )
    note: str = Field("", max_length=2000, description="Why (recorded)")
    budget_acknowledged: bool = Field(
        False, description="I acknowledge the expected quota budget shown in the manifest"
    )

    @model_validator(mode="after")
    def _budget_ack(self) -> CanaryApproval:
        if self.approve and not self.budget_acknowledged:
            raise ValueError("approving a trial requires budget_acknowledged = true")
        return self


def canary_profile(profile: RunnerProfile) -> RunnerProfile:
    """The profile both canary arms run under: one command and one environment.

    The candidate uses the baseline's arm args (unless the profile declares its
    own) and neither arm gets the evidence-eval treatment (home seed, env): the
    implementation revision, passed through the episode's extra env, is the only
    difference between the arms.
    """
    arm_args = dict(profile.arm_args)
    if "candidate" not in arm_args and "baseline" in arm_args:
        arm_args["candidate"] = list(arm_args["baseline"])
    treatment = profile.treatment.model_copy(update={"home_seed": None, "env": {}})
    return profile.model_copy(update={"arm_args": arm_args, "treatment": treatment})


def new_trial_id() -> str:
    return f"canary-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def _arm_effects(params: CanaryTrialParams, arm: str) -> dict[str, Any]:
    """The simulator configuration of one arm's revision (PAIRLAB_SIM_EFFECTS)."""
    effects = params.baseline_effects if arm == "baseline" else params.candidate_effects
    return {
        **SIM_TRIAL_NOISE,
        "quota": {
            "five_hour_budget_tokens": params.sim_five_hour_budget_tokens,
            "seven_day_budget_tokens": params.sim_seven_day_budget_tokens,
        },
        "arms": {arm: {"effects": dict(effects), "solve_p": params.sim_solve_p}},
        "latency": {"ms_per_1k_tokens": params.sim_ms_per_1k_tokens},
    }


def _budget(params: CanaryTrialParams, profile: RunnerProfile, episodes: int) -> Budget:
    total = episodes * params.estimated_tokens_per_episode
    budgets: dict[str, int | None] = {"five-hour": None, "seven-day": None}
    if profile.quota.probe == "sim":
        budgets = {
            "five-hour": params.sim_five_hour_budget_tokens,
            "seven-day": params.sim_seven_day_budget_tokens,
        }
    return Budget(
        episodes=episodes,
        estimated_tokens_per_episode=params.estimated_tokens_per_episode,
        estimated_tokens_total=total,
        window_budget_tokens=budgets,
        estimated_quota_percent={
            w: (round(100.0 * total / b, 1) if b else None) for w, b in budgets.items()
        },
    )


@task(name="freeze-manifest", cache_policy=NO_CACHE, persist_result=False)
def freeze_manifest(
    params: CanaryTrialParams,
    trial_id: str,
    suite: LoadedSuite,
    profile: RunnerProfile,
    schedule: Schedule,
) -> TrialManifest:
    fixtures = []
    for task_id in params.task_filter:
        entry = suite.task(task_id)
        fixtures.append(
            FrozenFixture(
                task_id=task_id,
                fixture=entry.fixture,
                fixture_digest=tree_digest(suite.fixture_path(entry)),
                acceptance_contract_id=contract_digest(entry),
                required_checks=[g.name for g in entry.graders],
            )
        )
    image = profile.image or profile.client
    environment = {
        "profile": params.profile,
        "image": image,
        "backend": params.backend,
        "client": profile.client,
        "client_version": profile.version or "unknown",
    }
    sim = profile.quota.probe == "sim"
    return TrialManifest(
        trial_id=trial_id,
        created_at=datetime.now(UTC),
        intervention_id=params.intervention_id,
        changed_dimensions=["implementation-revision"],
        baseline=ArmRevision(
            arm="baseline",
            revision=params.baseline_revision,
            sim_effects=_arm_effects(params, "baseline") if sim else None,
        ),
        candidate=ArmRevision(
            arm="candidate",
            revision=params.candidate_revision,
            sim_effects=_arm_effects(params, "candidate") if sim else None,
        ),
        source_revision=source_revision(),
        environment_id=to_identifier(
            f"{image}:{params.backend}:{profile.client}-{environment['client_version']}"
        ),
        environment=environment,
        fixtures=fixtures,
        review_dimensions=list(params.review_dimensions),
        assignments=[
            Assignment(
                provider=PROVIDER_OF_READER.get(profile.usage.reader, profile.usage.reader),
                model=params.model or f"{profile.client}-default",
                effort=params.effort,
            )
        ],
        strata=list(params.strata),
        strata_meaning={s: STRATA_MEANING[s] for s in params.strata},
        repetitions=params.repetitions,
        seed=params.seed,
        quota_interval_s=params.quota_interval_s,
        unrelated_concurrent_use=params.unrelated_concurrent_use,
        budget=_budget(params, profile, len(schedule.entries)),
        planned=[
            PlannedRun(
                episode_id=e.episode_id,
                pair_id=e.pair_id,
                task_id=e.task_id,
                stratum=e.stratum or "",
                repetition=e.repetition,
                order=e.order,
                arm=e.arm,
            )
            for e in schedule.entries
        ],
    )


def _assignment(a: Assignment) -> str:
    return f"{a.provider}/{a.model}/{a.effort or '-'}"


def manifest_markdown(manifest: TrialManifest) -> str:
    b = manifest.budget
    lines = [
        f"# Canary trial `{manifest.trial_id}` — awaiting approval",
        "",
        f"Intervention **{manifest.intervention_id}** (changes: {', '.join(manifest.changed_dimensions)}): "
        f"`{manifest.baseline.revision}` → `{manifest.candidate.revision}`",
        "",
        "| frozen | value |",
        "| --- | --- |",
        f"| source revision | `{manifest.source_revision}` |",
        f"| environment | `{manifest.environment_id}` |",
        f"| assignments | {', '.join(_assignment(a) for a in manifest.assignments)} |",
        f"| review dimensions | {', '.join(manifest.review_dimensions)} |",
        f"| strata | {', '.join(f'{k}: {v}' for k, v in manifest.strata_meaning.items())} |",
        f"| repetitions | {manifest.repetitions} per task and stratum, AB/BA alternating (seed {manifest.seed}) |",
        f"| quota interval | {manifest.quota_interval_s} s per run |",
        f"| unrelated concurrent use | {manifest.unrelated_concurrent_use} |",
        "",
        "| task | fixture | fixture digest | acceptance contract | required checks |",
        "| --- | --- | --- | --- | --- |",
    ]
    for f in manifest.fixtures:
        lines.append(
            f"| {f.task_id} | {f.fixture} | `{f.fixture_digest[:19]}…` | "
            f"`{f.acceptance_contract_id[:19]}…` | {', '.join(f.required_checks)} |"
        )
    pct = ", ".join(
        f"{w}: {p}%" if p is not None else f"{w}: unknown"
        for w, p in b.estimated_quota_percent.items()
    )
    lines += [
        "",
        f"## Expected budget: {b.episodes} episodes × ~{b.estimated_tokens_per_episode:,} tokens "
        f"= ~{b.estimated_tokens_total:,} tokens ({pct})",
        "",
        "## Planned episodes (in order)",
        "",
        "| # | stratum | task | repetition | order | arm |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for i, p in enumerate(manifest.planned, 1):
        lines.append(f"| {i} | {p.stratum} | {p.task_id} | {p.repetition} | {p.order} | {p.arm} |")
    lines += ["", "Resume the run with approve, approver and budget acknowledgement to start it."]
    return "\n".join(lines) + "\n"


def _seed_warm(prepared: Any, planned: PlannedEpisode) -> None:
    graph = Path(prepared.mounts["graph"])
    if prepared.backend == "local" and graph.is_dir():
        payload = {"stratum": "warm", "task_id": planned.task_id, "findings": []}
        (graph / WARM_SEED_FILE).write_text(json.dumps(payload) + "\n", encoding="utf-8")


def _wait_until(deadline: float) -> None:
    while (left := deadline - time.time()) > 0:
        time.sleep(min(left, 0.5))


def run_canary_episode(
    planned: PlannedEpisode,
    *,
    params: CanaryTrialParams,
    suite: LoadedSuite,
    profile: RunnerProfile,
    backend: ExecutionBackend,
    run_dir: RunDir,
    account_dir: Path | None,
) -> RunEvidence:
    """One run inside its scheduled quota interval; returns its evidence (persisted)."""
    entry = suite.task(planned.task_id)
    stratum = planned.stratum or "cold"
    extra_env = {"PAIRLAB_STRATUM": stratum}
    if profile.quota.probe == "sim":
        extra_env["PAIRLAB_SIM_EFFECTS"] = json.dumps(_arm_effects(params, planned.arm))
    spec = episode_spec(
        planned,
        run_id=run_dir.run_id,
        suite=suite,
        profile=profile,
        model=params.model,
        seed=params.seed,
        keep_workspace=params.keep_workspaces,
        account_dir=account_dir,
        extra_env=extra_env,
    )
    episode_dir = run_dir.episode_dir(planned.episode_id)
    prepared = prepare_episode(backend, spec)
    try:
        if stratum == "warm":
            _seed_warm(prepared, planned)
        before = quota_snapshot(profile, account_dir)
        interval_start = min((o.observed_at for o in before), default=datetime.now(UTC))
        outcome = run_episode(backend, prepared)
        collected = collect_and_grade(
            quoted(backend),
            quoted(prepared),
            profile=quoted(profile),
            task_entry=quoted(entry),
            outcome=quoted(outcome),
            episode_dir=episode_dir,
        )
        usage, ledger, checks = collected.usage, collected.ledger, collected.checks
        # Notification: the run's outcome is persisted where the operator reads it.
        notice = {
            "episode_id": planned.episode_id,
            "arm": planned.arm,
            "exit_code": outcome.exit_code,
            "checks": {c.name: c.passed for c in checks},
        }
        run_dir.write_json(f"{TRIALS}/notifications/{safe_name(planned.episode_id)}.json", notice)
        notified_at = datetime.now(UTC)
        # Notification latency: from the start of the run until the operator can read its
        # outcome (the agent's work plus collection and grading), never shorter than the run.
        notification_ms = (
            max((notified_at - outcome.started_at).total_seconds() * 1000.0, 0.0)
            if outcome.started_at is not None
            else None
        )
        deadline = interval_start.timestamp() + params.quota_interval_s
        overrun = time.time() > deadline
        _wait_until(deadline)
        after = quota_snapshot(profile, account_dir)
    finally:
        teardown_episode(backend, prepared)
    record = episode_record(
        planned,
        run_id=run_dir.run_id,
        stratum=stratum,
        suite=suite,
        profile=profile,
        backend_name=backend.name,
        requested_model=params.model,
        outcome=outcome,
        usage=usage,
        checks=checks,
        quota_before=before,
        quota_after=after,
        ledger=ledger,
        include_transcript=False,
    )
    evidence = RunEvidence(
        episode_id=planned.episode_id,
        pair_id=planned.pair_id,
        task_id=planned.task_id,
        stratum=stratum,
        repetition=planned.repetition,
        order=planned.order,
        arm=planned.arm,
        exit_code=outcome.exit_code,
        timed_out=outcome.timed_out,
        checks=[CheckResult(name=c.name, passed=c.passed) for c in checks],
        observed_model=usage.primary_model,
        usage=usage.vector,
        usage_provenance=usage.provenance_counts(),
        critical_path_ms=outcome.latency_ms,
        notification_ms=notification_ms,
        quota_before=before,
        quota_after=after,
        interval_scheduled_s=params.quota_interval_s,
        interval_overrun=overrun,
    )
    # The evidence is written first: a record without evidence would be skipped on resume.
    run_dir.write_json(_evidence_name(planned.episode_id), evidence.model_dump(mode="json"))
    record_episode(run_dir, record)
    return evidence


def _evidence_name(episode_id: str) -> str:
    return f"{TRIALS}/evidence/{safe_name(episode_id)}.json"


def _load_evidence(run_dir: RunDir, episode_id: str) -> RunEvidence | None:
    path = run_dir.path / _evidence_name(episode_id)
    if not path.is_file():
        return None
    return RunEvidence.model_validate_json(path.read_bytes())


def _ask_approval(params: CanaryTrialParams) -> tuple[str, CanaryApproval | None]:
    try:
        decision = pause_flow_run(
            wait_for_input=CanaryApproval,
            timeout=params.approval_timeout_s,
            poll_interval=1,
            key="canary-approval",
        )
    except FlowPauseTimeout:
        return "timeout", None
    return ("approved" if decision.approve else "rejected"), decision


def _approval_record(
    outcome: str, decision: CanaryApproval | None, params: CanaryTrialParams
) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "outcome": outcome,
        "approved": outcome == "approved",
        "approver": decision.approver if decision else None,
        "note": decision.note if decision else None,
        "budget_acknowledged": decision.budget_acknowledged if decision else None,
        "decided_at": datetime.now(UTC).isoformat(),
        "timeout_s": params.approval_timeout_s,
    }


@task(name="judge-artifact", cache_policy=NO_CACHE, persist_result=False)
def judge_trial_artifact(run_dir: RunDir, trial_id: str) -> dict[str, Any]:
    report = judge_file(run_dir.path / TRIALS / "artifact.json")
    verdict = report.to_json()
    run_dir.write_json(f"{TRIALS}/verdict.json", verdict)
    create_markdown_artifact(
        key=artifact_key("verdict", trial_id),
        markdown=f"# Canary verdict `{trial_id}`\n\n```\n{render_text(report)}\n```\n",
        description="pairlab canary verdict",
    )
    return verdict


@flow(name="canary-trial", validate_parameters=True, log_prints=False)
def canary_trial(params: CanaryTrialParams) -> dict[str, Any]:
    """Freeze a paired canary, wait for explicit approval, run it interleaved and judge it."""
    logger = get_run_logger()
    trial_id = params.run_id or new_trial_id()
    suite, profile = load_eval_inputs(params.suite, params.profile)
    profile = canary_profile(profile)
    schedule = plan_canary(
        params.task_filter, params.repetitions, params.seed, trial_id, params.strata
    )
    run_dir = RunDir(Path(params.work_dir), trial_id)
    existing = run_dir.path / TRIALS / "manifest.json"
    if existing.is_file():  # a resumed trial keeps its frozen manifest
        manifest = TrialManifest.model_validate_json(existing.read_bytes())
    else:
        manifest = freeze_manifest(params, trial_id, suite, profile, schedule)
        run_dir.write_json(f"{TRIALS}/manifest.json", manifest.model_dump(mode="json"))
    create_markdown_artifact(
        key=artifact_key("canary-manifest", trial_id),
        markdown=manifest_markdown(manifest),
        description="frozen canary manifest and expected budget",
    )
    logger.info(
        "trial %s frozen (%d episodes); waiting for approval", trial_id, len(manifest.planned)
    )

    outcome, decision = _ask_approval(params)
    approval = _approval_record(outcome, decision, params)
    run_dir.write_json(f"{TRIALS}/approval.json", approval)
    if outcome != "approved":
        why = (
            f"rejected by {approval['approver']}: {approval['note'] or 'no note'}"
            if outcome == "rejected"
            else f"no approval within {params.approval_timeout_s} s"
        )
        create_markdown_artifact(
            key=artifact_key("canary-outcome", trial_id),
            markdown=f"# Canary trial `{trial_id}` not run\n\n{why}. Zero episodes executed.\n",
            description="canary trial outcome",
        )
        logger.info("trial %s not run: %s", trial_id, why)
        return {
            "trial_id": trial_id,
            "outcome": outcome,
            "reason": why,
            "episodes": 0,
            "verdict": None,
        }

    run_dir.ensure()
    account_dir: Path | None = None
    if profile.quota.probe == "sim":
        account_dir = (Path(params.work_dir) / "sim-accounts" / trial_id).resolve()
        if not (account_dir / "quota.json").exists():
            open_sim_account(
                account_dir,
                {
                    "five-hour": params.sim_five_hour_budget_tokens,
                    "seven-day": params.sim_seven_day_budget_tokens,
                },
            )
    backend = make_backend(params.backend, run_id=trial_id)
    evidence: list[RunEvidence] = []
    for planned in schedule.entries:  # strictly sequential: one quota interval at a time
        done = _load_evidence(run_dir, planned.episode_id)
        if done is None:
            done = run_canary_episode(
                planned,
                params=params,
                suite=suite,
                profile=profile,
                backend=backend,
                run_dir=run_dir,
                account_dir=account_dir,
            )
        evidence.append(done)
    records = run_dir.completed()
    run_dir.write_episodes_jsonl(records.values(), [e.episode_id for e in schedule.entries])
    artifact = build_artifact(manifest, evidence)
    run_dir.write_json(f"{TRIALS}/artifact.json", artifact)
    verdict = judge_trial_artifact(run_dir, trial_id)
    overruns = [e.episode_id for e in evidence if e.interval_overrun]
    run_dir.write_text(
        "report.md",
        manifest_markdown(manifest).replace("awaiting approval", f"verdict {verdict['verdict']}")
        + f"\nApproved by {approval['approver']}. Interval overruns: {len(overruns)}.\n",
    )
    published = publish_run_outputs(run_dir.path, params.store, params.on_secret)
    logger.info(
        "trial %s: verdict %s (exit %s)", trial_id, verdict["verdict"], verdict["exit_code"]
    )
    return {
        "trial_id": trial_id,
        "outcome": "completed",
        "episodes": len(evidence),
        "verdict": verdict["verdict"],
        "subscription_verdict": verdict["subscription_verdict"],
        "exit_code": verdict["exit_code"],
        "reason_codes": verdict["reason_codes"],
        "interval_overruns": overruns,
        "staging": str(run_dir.path),
        "published": published,
    }


def deployment() -> Any:
    """The `canary-trial` deployment: small simulator trial; its schedule starts inactive."""
    from prefect.schedules import Cron

    defaults = CanaryTrialParams(unrelated_concurrent_use=False)
    return canary_trial.to_deployment(
        name="canary-trial",
        parameters={"params": defaults.model_dump(mode="json")},
        description=(
            "Paired baseline/candidate canary (simulator: 2 tasks x cold/warm x 2 repetitions). "
            "Pauses for explicit approval before anything runs."
        ),
        tags=["pairlab", "canary"],
        schedules=[Cron("0 6 * * 1", timezone="UTC", active=False)],
    )
