"""The ``run-pair`` flow: one pair of an eval run, on whichever worker picks it up.

Deployed to a work pool (infra/prefect.yaml) and started by the evidence-eval
flow in ``dispatch.mode="work-pool"`` (flows/evidence/dispatch.py). It runs the pair's
episodes in planned order with the same ``run-pair`` task the in-process mode
uses, skipping episodes already persisted in the shared run directory, so a
re-dispatched pair resumes where the crashed attempt stopped. A profile that runs
against the provider emulator gets the worker's own emulator for the pair (its quota
account is the pair's: concurrent use is judged per worker).
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger

from flows.evidence.dispatch import PAIR_FLOW_NAME, RunPairRequest
from flows.evidence.episode import EpisodeContext, run_pair
from pairlab.adapters.episode.io import load_eval_inputs, sim_account_dir
from pairlab.adapters.episode.session import open_run_environment
from pairlab.adapters.run.directory import RunDir
from pairlab.core.schemas.episode import EpisodeRecord


@flow(name=PAIR_FLOW_NAME, validate_parameters=True, log_prints=False)
def run_pair_flow(request: RunPairRequest) -> list[str]:
    """Run the episodes of one pair in planned order; return their episode ids."""
    params = request.params
    work_dir = Path(params.work_dir)
    # a pypi intervention: installed on this worker too (cached; a file lock when several
    # workers of one host install at once)
    suite, profile = load_eval_inputs(
        params.suite, params.profile, params.intervention, backend_name=params.backend
    )
    run_dir = RunDir(work_dir, request.run_id).ensure()
    done: dict[str, EpisodeRecord] = {}
    for planned in request.pair:
        if (record := run_dir.load_record(planned.episode_id)) is not None:
            done[planned.episode_id] = record
    get_run_logger().info(
        "pair %s: %d episodes, %d already recorded",
        request.pair[0].pair_id,
        len(request.pair),
        len(done),
    )
    # a profile against the provider emulator: this worker's own emulator (and run network)
    env = open_run_environment(
        profile,
        backend_name=params.backend,
        run_id=request.run_id,
        ledger_dir=run_dir.path / "emulator",
        settings=params.emulator,
        account=params.account,
    )
    try:
        replanned = frozenset({request.pair[0].pair_id} if request.replanned else ())
        ctx = EpisodeContext(
            params, suite, env, run_dir, sim_account_dir(work_dir, profile), replanned=replanned
        )
        records = run_pair(request.pair, ctx, done)
    finally:
        env.close()
    return [r.episode_id for r in records]
