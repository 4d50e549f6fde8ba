"""The canary-trial flow (DESIGN 9): freeze, pause for approval, run interleaved, judge, publish.

1. Read the account's windows now and freeze the trial manifest; show it with the
   expected budget and each window's expected share of what remains, with a warning
   where it exceeds it (flows/canary/manifest.py, core/canary/window_share.py).
2. Pause for a typed approval; nothing runs before it, and a rejection or a
   timeout ends the trial with zero episodes in a Cancelled state that says why
   (flows/canary/approval.py).
3. Run the cold and warm strata, AB/BA per repetition, one run per scheduled
   whole-second quota interval, each AB/BA pair only while the approved ceilings hold
   (flows/canary/running.py). A real CLI runs on a registered account: baseline arm
   against the intervention's treated arm (flows/canary/account.py); a credential the
   provider rejects stops the trial at its first run, ``credential-rejected``, and a
   provider no request reached stops it at that run, ``provider-unreachable`` (its
   ``host:port`` named); nothing of that run is recorded, nothing is published. A
   provider's rate or usage limit that ends a run stops the trial after it: the run is
   excluded (``provider-limit``), the trial is judged on its complete pairs and ends
   Cancelled ``provider-limit``; a resume runs that pair again
   (flows/canary/provider_limits.py).
4. Write loom's version-1 comparison artifact and judge it with the engine of
   ``pairlab compare`` (flows/canary/judging.py).
5. Write report.md and publish the run with its approval record
   (flows/canary/publishing.py).

The evaluator never kills, switches or rolls back anything; it reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import State, flow, get_run_logger

from flows.canary.account import account_certification, account_profile, with_treated_arm
from flows.canary.approval import decide, decision_heading, end_not_run, not_run
from flows.canary.judging import judge_trial, verdict_summary
from flows.canary.manifest import (
    approval_line,
    budget_lines,
    canary_profile,
    frozen_manifest,
    manifest_markdown,
    new_trial_id,
    show_manifest,
)
from flows.canary.provider_limits import limit_stop_message
from flows.canary.publishing import publish_trial
from flows.canary.running import run_trial, trial_windows
from flows.evidence.budget_ceilings import check_account_budget, has_ceiling
from flows.params import CanaryTrialParams
from flows.run_ui import name_flow_run, show_refusal
from pairlab.adapters.episode.io import load_eval_inputs
from pairlab.adapters.run.directory import RunDir
from pairlab.core.accounts import refuse_credential_parameters
from pairlab.core.canary import RunEvidence
from pairlab.core.errors import PairlabError
from pairlab.core.schedule import plan_canary


def stable_trial_id() -> str:
    """A new trial's id; inside a flow run, derived from it (a suspended trial runs its
    flow again from the top once approved and must find the same trial)."""
    from prefect.runtime import flow_run

    run_id = flow_run.get_id()
    if run_id is None:
        return new_trial_id()
    start = flow_run.get_scheduled_start_time()
    return f"canary-{start:%Y%m%dT%H%M%SZ}-{str(run_id).replace('-', '')[:6]}"


@flow(name="canary-trial", validate_parameters=True, log_prints=False)
def canary_trial(params: CanaryTrialParams) -> dict[str, Any] | State[Any]:
    """Freeze a paired canary, wait for explicit approval, run it interleaved and judge it."""
    trial_id = params.run_id or stable_trial_id()
    name_flow_run(trial_id)
    try:
        return _trial(params, trial_id)
    except PairlabError as exc:  # refused, or stopped by the account: said on screen too
        show_refusal(trial_id, exc)
        raise


def _trial(params: CanaryTrialParams, trial_id: str) -> dict[str, Any] | State[Any]:
    logger = get_run_logger()
    # a credential pasted into a parameter (the form) is refused before anything runs
    refuse_credential_parameters(params.model_dump(mode="json"))
    check_account_budget(params)
    if params.account is not None and not has_ceiling(params):
        logger.warning(
            "trial %s runs on account %r with NO BUDGET CEILING: nothing stops it before its "
            "plan is done; give budget_tokens or budget_window_percent (docs/accounts.md)",
            trial_id,
            params.account,
        )
    # on an account: the intervention wired into the treated arm, as the eval wires it
    suite, profile = load_eval_inputs(
        params.suite,
        params.profile,
        params.intervention,
        backend_name=params.backend if params.account is not None else None,
    )
    params = with_treated_arm(params, profile)  # none given: the widest it supports
    profile = canary_profile(profile, account=params.account, treated_arm=params.treated_arm)
    # the runs wire the account themselves when approved (on Docker with the provider as
    # the run network reaches it, not the host's URL), so they get the profile before it
    run_profile = profile
    profile = account_profile(params, profile)  # the account's record only, no credential
    schedule = plan_canary(
        params.task_filter, params.repetitions, params.seed, trial_id, params.strata
    )
    run_dir = RunDir(Path(params.work_dir), trial_id)
    # the account's windows now: each one's expected share of what remains, before approval
    windows = trial_windows(profile, run_dir)
    manifest = frozen_manifest(params, trial_id, run_dir, suite, profile, schedule, windows)
    # the account's certification now (certify --account), shown to the approver, refusing
    # nothing (DESIGN 4c)
    certification = account_certification(params)
    if certification is not None and params.account is not None:
        line = certification.line(params.account)
        logger.info("trial %s account %r: %s", trial_id, params.account, line)
    logger.info(
        "trial %s frozen (%d episodes); waiting for approval; %s",
        trial_id,
        len(manifest.planned),
        " ".join(
            line.removeprefix("- ").replace("**", "")
            for line in budget_lines(
                manifest.budget, sim=manifest.baseline.sim_effects is not None, windows=windows
            )
            if line
        ),
    )

    approval = decide(params, run_dir, manifest, windows, certification)
    if not approval["approved"]:
        result = not_run(trial_id, approval, params)
        logger.info("trial %s not run: %s", trial_id, result["reason"])
        # a distinct final state: nothing ran, and its message says why
        return end_not_run(f"trial not run: {result['reason']}", result)
    logger.info("trial %s %s", trial_id, approval_line(approval))
    manifest = manifest.model_copy(update={"approval": approval})

    runs = run_trial(params, trial_id, schedule, suite, run_profile, run_dir)
    evidence = runs.evidence
    if runs.stopped is not None and not evidence:  # stopped before its first run
        return _budget_stop(trial_id, runs.stopped, {"trial_id": trial_id, "episodes": 0})
    report = judge_trial(run_dir, trial_id, manifest, evidence)
    published = publish_trial(
        params,
        run_dir,
        manifest,
        approval,
        evidence,
        report,
        stopped=runs.stopped,
        limited=runs.limited,
    )
    show_manifest(
        trial_id,
        manifest_markdown(
            manifest, heading=f"verdict {report.verdict}, {decision_heading(approval, params)}"
        ),
        f"canary manifest — published to {published['published']['location']}",
    )
    logger.info(
        "trial %s: verdict %s (exit %s); published to %s",
        trial_id,
        report.verdict,
        report.exit_code,
        published["published"]["location"],
    )
    outcome = "completed" if runs.stopped is None else "budget-exhausted"
    result = {
        "trial_id": trial_id,
        "outcome": outcome if runs.limited is None else "provider-limit",
        "episodes": len(evidence),
        "episodes_planned": len(schedule.entries),
        **verdict_summary(report),
        **published,
        "staging": str(run_dir.path),
    }
    if runs.limited is not None:
        return _limit_stop(trial_id, runs.limited, evidence, result)
    if runs.stopped is not None:
        return _budget_stop(trial_id, runs.stopped, result)
    return result


def _limit_stop(
    trial_id: str, words: str, evidence: list[RunEvidence], result: dict[str, Any]
) -> State[Any]:
    """A trial a provider limit stopped: judged and published on its complete pairs (the
    limited run excluded), ended Cancelled ``provider-limit`` whatever that verdict says
    (it is not the trial's), resumable once the limit lifts (flows/canary/provider_limits.py)."""
    from prefect.states import Cancelled

    limited = [e.episode_id for e in evidence if e.excluded_reason is not None]
    message = limit_stop_message(trial_id)
    get_run_logger().warning(
        "trial %s %s: %s; %d run(s) done", trial_id, message, words, result["episodes"]
    )
    return Cancelled(
        message=message, data={**result, "provider_limit": words, "provider_limited": limited}
    )


def _budget_stop(trial_id: str, words: str, result: dict[str, Any]) -> State[Any]:
    """A trial stopped at its token or percent ceiling: judged and published on the pairs that ran,
    ended Cancelled ``budget-exhausted`` (as an eval), resumable with a higher ceiling."""
    from prefect.states import Cancelled

    from flows.run_ui import budget_stop_message

    message = budget_stop_message(trial_id)
    get_run_logger().warning(
        "trial %s %s: %s; %d run(s) done", trial_id, message, words, result["episodes"]
    )
    return Cancelled(message=message, data={**result, "budget_stop": words})


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
