"""The canary-trial flow (DESIGN 9): freeze, pause for approval, run interleaved, judge, publish.

1. Freeze the trial manifest and show it with the expected budget
   (flows/canary_manifest.py).
2. Pause for a typed approval; nothing runs before it, and a rejection or a
   timeout ends the trial with zero episodes (flows/canary_approval.py).
3. Run the cold and warm strata, AB/BA per repetition, one run per scheduled
   whole-second quota interval (flows/canary_running.py).
4. Write loom's version-1 comparison artifact and judge it with the engine of
   ``pairlab compare`` (flows/canary_judging.py).
5. Write report.md and publish the run with its approval record
   (flows/canary_publishing.py).

The evaluator never kills, switches or rolls back anything; it reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger

from flows.canary_approval import decide, not_run
from flows.canary_judging import judge_trial, verdict_summary
from flows.canary_manifest import canary_profile, frozen_manifest, new_trial_id
from flows.canary_publishing import publish_trial
from flows.canary_running import run_trial
from flows.params import CanaryTrialParams
from pairlab.adapters.episode_io import load_eval_inputs
from pairlab.adapters.rundir import RunDir
from pairlab.core.plan import plan_canary


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
    manifest = frozen_manifest(params, trial_id, run_dir, suite, profile, schedule)
    logger.info(
        "trial %s frozen (%d episodes); waiting for approval", trial_id, len(manifest.planned)
    )

    approval = decide(params, run_dir)
    if not approval["approved"]:
        result = not_run(trial_id, approval, params)
        logger.info("trial %s not run: %s", trial_id, result["reason"])
        return result

    evidence = run_trial(params, trial_id, schedule, suite, profile, run_dir)
    report = judge_trial(run_dir, trial_id, manifest, evidence)
    published = publish_trial(params, run_dir, manifest, approval, evidence, report)
    logger.info("trial %s: verdict %s (exit %s)", trial_id, report.verdict, report.exit_code)
    return {
        "trial_id": trial_id,
        "outcome": "completed",
        "episodes": len(evidence),
        **verdict_summary(report),
        **published,
        "staging": str(run_dir.path),
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
