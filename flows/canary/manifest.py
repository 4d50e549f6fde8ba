"""Freezing a canary trial (DESIGN 9, step 1): the manifest, its budget, and how it is shown.

Everything both arms share is fixed here before anything runs — fixtures and
their digests, source revision, environment, acceptance contracts, required
checks, review dimensions, the provider/model/effort assignment, the two
revisions and the one intervention, the strata, the AB/BA plan and the expected
quota budget — written to ``trials/manifest.json`` (a resumed trial keeps it)
and shown as a markdown artifact for the approver.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from prefect.artifacts import create_markdown_artifact

from flows.params import CanaryTrialParams
from pairlab.adapters.run.directory import RunDir
from pairlab.adapters.run.trial_inputs import contract_digest, source_revision, tree_digest
from pairlab.core.canary import (
    ArmRevision,
    Assignment,
    Budget,
    FrozenFixture,
    PlannedRun,
    TrialManifest,
    to_identifier,
)
from pairlab.core.canary.tokens import loom_provider
from pairlab.core.canary.window_share import share_words, window_shares
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.intervention_wiring import planned_treated_arm
from pairlab.core.schedule import Schedule
from pairlab.core.schemas.catalog import LoadedSuite
from pairlab.core.schemas.profile import RunnerProfile
from pairlab.core.schemas.quota import QuotaObservation
from tasks.report import artifact_key
from tasks.retry import plain_task

TRIALS: Final = "trials"  # the trial's own files inside its run dir
STRATA_MEANING: Final = {
    "cold": "fresh HOME, workspace and empty graph dir; PAIRLAB_STRATUM=cold",
    "warm": (
        "fresh HOME and workspace; graph dir pre-seeded with a warm-start file (local backend) "
        "and PAIRLAB_STRATUM=warm"
    ),
}
# The simulator's usage-model overrides shared by both arms of a trial: low noise so a
# whole-percent quota (precision 1.0) can resolve the difference between revisions.
SIM_TRIAL_NOISE: Final[dict[str, Any]] = {
    "base": {"task_factor_sigma": 0.1},
    "noise": {"episode_sigma": 0.05, "dimension_sigma": 0.05},
}


def canary_profile(
    profile: RunnerProfile, *, account: str | None = None, treated_arm: str | None = None
) -> RunnerProfile:
    """The profile both canary arms run under: one command and one environment.

    On a registered ``account`` (a real CLI, flows/canary/account.py) the profile is the
    eval's, intervention wired: baseline = its baseline arm, candidate = ``treated_arm``
    (None: the widest arm the intervention supports, ``planned_treated_arm``), which the
    intervention must support (``arm-not-supported`` otherwise). A profile
    against the provider emulator without an account is refused: the emulator's
    scripted model plays both arms the same. For the simulator the candidate uses the
    baseline's arm args (unless the profile declares its own) and neither arm gets the
    evidence-eval treatment (home seed, env): the implementation revision, passed through
    the episode's extra env, is the only difference between the arms.
    """
    if account is not None:
        treated_arm = planned_treated_arm(treated_arm, profile.arm_args)
        if treated_arm not in profile.arm_args:
            stamp = profile.intervention
            raise InvalidInputError(
                f"intervention '{stamp.id if stamp else '-'}' does not support the arm "
                f"{treated_arm} on profile '{profile.client}' (supported: "
                f"{', '.join(a for a in profile.arm_args if a != 'baseline')})",
                reason=ReasonCode.ARM_NOT_SUPPORTED,
            )
        return profile
    if profile.endpoint is not None:
        # the simulator's arms differ by an implementation revision (PAIRLAB_SIM_EFFECTS);
        # a real CLI's trial compares its baseline and treated arms on a real account
        raise InvalidInputError(
            f"profile '{profile.client}' runs against the provider emulator: a canary trial "
            "of a real CLI runs on a registered account (give account, --account; "
            "docs/accounts.md), else use a simulator profile, e.g. sim",
            reason=ReasonCode.INVALID_PROFILE,
        )
    arm_args = dict(profile.arm_args)
    if "candidate" not in arm_args and "baseline" in arm_args:
        arm_args["candidate"] = list(arm_args["baseline"])
    treatment = profile.treatment.model_copy(update={"home_seed": None, "env": {}})
    # the trial compares revisions of its own intervention, not the profile's
    update = {"arm_args": arm_args, "treatment": treatment, "intervention": None}
    return profile.model_copy(update=update)


def new_trial_id() -> str:
    return f"canary-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def arm_effects(params: CanaryTrialParams, arm: str) -> dict[str, Any]:
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
    per_episode = params.estimated_window_percent_per_episode
    fallback = None if per_episode is None else round(per_episode * episodes, 1)
    return Budget(
        episodes=episodes,
        estimated_tokens_per_episode=params.estimated_tokens_per_episode,
        estimated_tokens_total=total,
        window_budget_tokens=budgets,
        estimated_quota_percent={
            w: (round(100.0 * total / b, 1) if b else fallback) for w, b in budgets.items()
        },
        estimated_window_percent_per_episode=per_episode,
    )


def compared(params: CanaryTrialParams, profile: RunnerProfile) -> tuple[str, str, str]:
    """What the trial compares: its intervention id and the two arms' revisions. A real CLI
    on an account: the intervention's treated arm against the stripped baseline arm."""
    stamp = profile.intervention if params.account is not None else None
    if stamp is None:
        return params.intervention_id, params.baseline_revision, params.candidate_revision
    return stamp.id, "baseline-arm:stripped", f"{stamp.id}@{stamp.version}:{params.treated_arm}-arm"


def check_same_comparison(
    manifest: TrialManifest, params: CanaryTrialParams, profile: RunnerProfile
) -> None:
    """A resumed real-CLI trial runs what its frozen manifest says, on the same account:
    another intervention, treated arm or account is ``resume-changed`` (exit 2)."""
    if params.account is None:
        return
    _, _, candidate = compared(params, profile)
    frozen = (manifest.candidate.revision, manifest.environment.get("account"))
    if frozen != (candidate, params.account):
        raise InvalidInputError(
            f"trial {manifest.trial_id} was frozen comparing {manifest.candidate.revision} on "
            f"account {frozen[1]!r}; this request compares {candidate} on account "
            f"{params.account!r}: resume it as frozen, or start a new trial",
            reason=ReasonCode.RESUME_CHANGED,
        )


@plain_task("freeze-manifest")
def freeze_manifest(
    params: CanaryTrialParams,
    trial_id: str,
    suite: LoadedSuite,
    profile: RunnerProfile,
    schedule: Schedule,
) -> TrialManifest:
    # loom's artifact names claude or codex: refuse any other client before anything runs
    provider = loom_provider(profile.usage.reader)
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
        **({} if params.account is None else {"account": params.account}),
        "image": image,
        "backend": params.backend,
        "client": profile.client,
        "client_version": profile.version or "unknown",
    }
    sim = profile.quota.probe == "sim"
    intervention_id, baseline_revision, candidate_revision = compared(params, profile)
    return TrialManifest(
        trial_id=trial_id,
        created_at=datetime.now(UTC),
        intervention_id=intervention_id,
        # loom's vocabulary: the intervention added to the baseline arm is the revision
        changed_dimensions=["implementation-revision"],
        baseline=ArmRevision(
            arm="baseline",
            revision=baseline_revision,
            sim_effects=arm_effects(params, "baseline") if sim else None,
        ),
        candidate=ArmRevision(
            arm="candidate",
            revision=candidate_revision,
            sim_effects=arm_effects(params, "candidate") if sim else None,
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
                provider=str(provider),
                model=params.model or profile.model or f"{profile.client}-default",
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


def frozen_manifest(
    params: CanaryTrialParams,
    trial_id: str,
    run_dir: RunDir,
    suite: LoadedSuite,
    profile: RunnerProfile,
    schedule: Schedule,
    windows: Sequence[QuotaObservation] | None = None,
) -> TrialManifest:
    """The trial's manifest: the one frozen earlier (a resumed trial), else frozen now;
    shown to the approver either way, with ``windows`` (the account's windows read now)."""
    existing = run_dir.path / TRIALS / "manifest.json"
    if existing.is_file():
        manifest = TrialManifest.model_validate_json(existing.read_bytes())
        check_same_comparison(manifest, params, profile)
    else:
        manifest = freeze_manifest(params, trial_id, suite, profile, schedule)
        run_dir.write_json(f"{TRIALS}/manifest.json", manifest.model_dump(mode="json"))
    deadline = datetime.now(UTC) + timedelta(seconds=params.approval_timeout_s)
    waiting = f"awaiting approval until {deadline:%Y-%m-%d %H:%M:%S} UTC (then not run)"
    show_manifest(
        trial_id,
        manifest_markdown(manifest, heading=waiting, windows=windows),
        f"canary manifest — {waiting}",
    )
    return manifest


def show_manifest(trial_id: str, markdown: str, description: str) -> None:
    """The run's one manifest artifact, created once and then updated in place (waiting,
    decided, published), so the run's Artifacts tab never shows a stale version; a
    suspended trial that runs again finds and updates its own."""
    from uuid import UUID

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import ArtifactUpdate
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        ArtifactFilterKey,
    )
    from prefect.runtime import flow_run

    key = artifact_key("canary-manifest", trial_id)
    run_id = flow_run.get_id()
    if run_id is not None:
        with get_client(sync_client=True) as client:
            found = client.read_artifacts(
                artifact_filter=ArtifactFilter(
                    key=ArtifactFilterKey(any_=[key]),
                    flow_run_id=ArtifactFilterFlowRunId(any_=[UUID(run_id)]),
                )
            )
            if found:
                client.update_artifact(
                    found[0].id, ArtifactUpdate(data=markdown, description=description)
                )
                return
    create_markdown_artifact(key=key, markdown=markdown, description=description)


def expected_total_line(budget: Budget) -> str:
    return (
        f"Expected budget: {budget.episodes} episodes × ~{budget.estimated_tokens_per_episode:,} "
        f"tokens = ~{budget.estimated_tokens_total:,} tokens."
    )


def budget_lines(
    budget: Budget,
    sim: bool,
    windows: Sequence[QuotaObservation] | None = None,
    *,
    with_total: bool = True,
) -> list[str]:
    """Per quota window: the trial's expected share of it and of what remains, with a
    warning where it would not fit. ``windows``: the account's windows as read now, before
    approval (core/canary/window_share.py); without a reading the simulator's trial account
    is fresh (all of each window remains) and a real account's remaining window is not
    known. ``with_total``: headed by the expected tokens (:func:`expected_total_line`)."""
    lines = [expected_total_line(budget), ""] if with_total else []
    shares = (
        {s.window: s for s in window_shares(budget.estimated_quota_percent, windows)}
        if windows is not None
        else {}
    )
    for window, share in budget.estimated_quota_percent.items():
        size = budget.window_budget_tokens.get(window)
        read = shares.get(window)
        if share is None:
            lines.append(
                f"- {window} window: size unknown — the share of the window cannot be checked"
                + ("" if read is None else f"; {share_words(read)}")
            )
            continue
        sized = (
            f"{size:,} tokens"
            if size is not None
            else f"estimated {budget.estimated_window_percent_per_episode:g} points per episode"
        )
        line = f"- {window} window ({sized}): **{share:g}%** of the window"
        if read is not None:
            line += f"; {share_words(read)}"
        elif sim:
            remaining = 100.0
            line += f", {remaining:g}% remaining (fresh trial account)"
            if share > remaining:
                line += (
                    f" — **WARNING: exceeds the remaining window by {share - remaining:.1f} "
                    "points; the trial would exhaust it**"
                )
        lines.append(line)
    return lines + resolution_lines(budget)


# Below this many points per run, a whole-percent reading (±1 point) blurs a run by more
# than 5%: the revisions' quota difference may not be resolved, verdict by verdict.
RESOLVED_POINTS_PER_RUN: Final = 20.0


def resolution_lines(budget: Budget) -> list[str]:
    """What whole-percent quota windows can resolve at this trial's size (said before
    approval: identical trials can reach different quota verdicts when they cannot)."""
    sizes = {w: s for w, s in budget.window_budget_tokens.items() if s}
    if not sizes:
        return []
    window, size = min(sizes.items(), key=lambda item: item[1])
    points = 100.0 * budget.estimated_tokens_per_episode / size
    if points >= RESOLVED_POINTS_PER_RUN:
        return []
    return [
        "",
        f"- **Quota resolution**: one run is ~{points:.1f} points of the {window} window, "
        f"read in whole percent (±1 point = ±{100 / points:.0f}% of a run): a quota "
        "difference between the revisions smaller than that cannot be resolved, and "
        "identical trials may reach different quota verdicts (supported or inconclusive). "
        "The token and latency evidence is unaffected.",
    ]


def _assignment(a: Assignment) -> str:
    return f"{a.provider}/{a.model}/{a.effort or '-'}"


def manifest_markdown(
    manifest: TrialManifest,
    heading: str = "awaiting approval",
    windows: Sequence[QuotaObservation] | None = None,
) -> str:
    b = manifest.budget
    lines = [
        f"# Canary trial `{manifest.trial_id}` — {heading}",
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
        f"| quota interval | {manifest.quota_interval_s:g} s per run, starting on a whole second |",
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
    lines += ["", "## Expected budget", ""]
    lines += budget_lines(b, sim=manifest.baseline.sim_effects is not None, windows=windows)
    if manifest.approval is not None:
        lines += ["", "## Decision", "", approval_line(manifest.approval)]
    lines += [
        "",
        "## Planned episodes (in order)",
        "",
        "| # | stratum | task | repetition | order | arm |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for i, p in enumerate(manifest.planned, 1):
        lines.append(f"| {i} | {p.stratum} | {p.task_id} | {p.repetition} | {p.order} | {p.arm} |")
    if manifest.approval is None:
        lines += [
            "",
            "Resume the run with approve, approver and budget acknowledgement to start it.",
        ]
    return "\n".join(lines) + "\n"


def approval_line(approval: dict[str, Any]) -> str:
    """``approved by ops-carol at 2026-…: looks fine (budget acknowledged)``."""
    outcome = approval.get("outcome")
    if outcome == "timeout":
        return f"not approved within {approval.get('timeout_s')} s (decided {approval.get('decided_at')})"
    ack = (
        "budget acknowledged" if approval.get("budget_acknowledged") else "budget NOT acknowledged"
    )
    return (
        f"{outcome} by {approval.get('approver')} at {approval.get('decided_at')}: "
        f"{approval.get('note') or 'no note'} ({ack})"
    )
