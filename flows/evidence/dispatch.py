"""Work-pool dispatch: one flow run of the ``run-pair`` deployment per pair.

The evidence-eval flow keeps its sliding window of ``concurrency`` pairs; in
``dispatch.mode="work-pool"`` each slot of the window runs ``dispatch_pair``
instead of the in-process ``run-pair`` task. ``dispatch_pair`` creates the pair's
flow run with ``prefect.deployments.run_deployment`` (linked to the eval as a
subflow), waits for it, then reads the pair's records from the shared run
directory. The pair is the unit: its arms run in planned order inside that flow
run, on whichever worker of the pool picks it up.

A pair run that ends Crashed or Failed is dispatched again (``redispatch``
times); the new run skips the pair's persisted episodes and clears what the
interrupted attempt left, so an episode is retried, never lost and never
recorded twice (records are written atomically under their episode id).

A worker whose machine dies leaves its flow run Running forever; Prefect's
answer is flow-run heartbeats plus a proactive automation that marks runs
without heartbeats Crashed. ``ensure_zombie_automation`` creates that
automation (scoped to run-pair flow runs) idempotently at dispatch time; the
same definition is in ``infra/automations/crash-zombie-pair-runs.yaml``.

A server or database restart answers 500 for a few seconds; the stack's clients retry
those requests (``PREFECT_CLIENT_RETRY_EXTRA_CODES``, infra/compose.yaml). Creating a
pair's flow run is not idempotent by itself (the server may have stored the run before
the error), so every creation carries an idempotency key: the eval's flow run, the pair
and the attempt. A retried request returns the run already created, never a second one.
"""

from __future__ import annotations

import os
import threading
import uuid
from typing import TYPE_CHECKING, Any, cast

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, ConfigDict

from flows.params import EvidenceEvalParams
from pairlab.adapters.run.directory import RunDir
from pairlab.core.errors import ExecutionError, ReasonCode
from pairlab.core.provider_limit import PROVIDER_LIMIT
from pairlab.core.schedule import PlannedEpisode
from pairlab.core.schemas.episode import EpisodeRecord

PAIR_FLOW_NAME = "run-pair"
PAIR_TAG = "pairlab-pair"
ZOMBIE_AUTOMATION_NAME = "pairlab-crash-zombie-pair-runs"
ZOMBIE_AFTER_ENV = "PAIRLAB_ZOMBIE_AFTER_S"
# Workers emit a heartbeat every PREFECT_FLOWS_HEARTBEAT_FREQUENCY s (default 180):
# three missed heartbeats and a margin before a run is declared dead.
DEFAULT_ZOMBIE_AFTER_S = 600
TERMINAL_EVENTS = [
    "prefect.flow-run.Completed",
    "prefect.flow-run.Failed",
    "prefect.flow-run.Cancelled",
    "prefect.flow-run.Crashed",
]

if TYPE_CHECKING:
    from prefect.client.schemas.objects import FlowRun

_automation_ready = threading.Event()
_automation_lock = threading.Lock()


class RunPairRequest(BaseModel):
    """The parameters of one run-pair flow run: the eval's parameters and one pair."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    pair: list[PlannedEpisode]
    params: EvidenceEvalParams
    # the pair runs again after a provider limit (core/provider_limit.py): held faults lifted
    replanned: bool = False


def zombie_automation(within_s: int) -> dict[str, Any]:
    """Mark a run-pair flow run Crashed when its heartbeats stop for ``within_s`` seconds."""
    return {
        "name": ZOMBIE_AUTOMATION_NAME,
        "description": "A run-pair flow run without heartbeats (its worker died) is marked Crashed, "
        "so the dispatching eval re-dispatches the pair.",
        "enabled": True,
        "trigger": {
            "type": "event",
            "posture": "Proactive",
            "after": ["prefect.flow-run.heartbeat"],
            "expect": ["prefect.flow-run.heartbeat", *TERMINAL_EVENTS],
            "match": {"prefect.resource.id": ["prefect.flow-run.*"]},
            "match_related": {
                "prefect.resource.role": "flow",
                "prefect.resource.name": PAIR_FLOW_NAME,
            },
            "for_each": ["prefect.resource.id"],
            "threshold": 1,
            "within": within_s,
        },
        "actions": [
            {
                "type": "change-flow-run-state",
                "state": "CRASHED",
                "message": "No heartbeat from this run-pair flow run: its worker is gone.",
            }
        ],
    }


def zombie_after_s() -> int:
    return int(os.environ.get(ZOMBIE_AFTER_ENV, "") or DEFAULT_ZOMBIE_AFTER_S)


def ensure_zombie_automation() -> None:
    """Create the zombie-run automation on the server once (kept if it already exists)."""
    if _automation_ready.is_set():
        return
    from prefect.client.orchestration import get_client
    from prefect.events.schemas.automations import AutomationCore

    with _automation_lock:
        if _automation_ready.is_set():
            return
        with get_client(sync_client=True) as client:
            if not client.read_automations_by_name(ZOMBIE_AUTOMATION_NAME):
                automation = AutomationCore.model_validate(zombie_automation(zombie_after_s()))
                client.create_automation(automation)
        _automation_ready.set()


def read_pair_records(run_dir: RunDir, pair: list[PlannedEpisode]) -> list[EpisodeRecord]:
    records = []
    missing = []
    for planned in pair:
        record = run_dir.load_record(planned.episode_id)
        if record is not None:
            records.append(record)
            if record.excluded_reason == PROVIDER_LIMIT:  # the rest of the pair was not run
                break
        else:
            missing.append(planned.episode_id)
    if missing:
        raise ExecutionError(
            f"pair run completed but episodes have no record in {run_dir.path}: {', '.join(missing)} "
            "(do the workers share work_dir with the dispatching flow?)",
            reason=ReasonCode.RUN_INCOMPLETE,
        )
    return records


def _eval_flow_run_id() -> str:
    """The dispatching (evidence-eval) flow run's id: the scope of an idempotency key."""
    from prefect.context import TaskRunContext

    context = TaskRunContext.get()
    if context is None or context.task_run.flow_run_id is None:  # outside a flow run
        return f"unscoped-{uuid.uuid4()}"
    return str(context.task_run.flow_run_id)


@task(name="dispatch-pair", cache_policy=NO_CACHE, persist_result=False)
def dispatch_pair(
    pair: list[PlannedEpisode],
    *,
    params: EvidenceEvalParams,
    run_dir: RunDir,
    replanned: bool = False,
) -> list[EpisodeRecord]:
    """Run one pair as a flow run of the run-pair deployment; return its records."""
    from prefect.deployments import run_deployment

    logger = get_run_logger()
    settings = params.dispatch
    ensure_zombie_automation()
    work_root = run_dir.path.parent.parent.resolve()
    request = RunPairRequest(
        run_id=run_dir.run_id,
        pair=pair,
        params=params.model_copy(update={"work_dir": str(work_root), "run_id": run_dir.run_id}),
        replanned=replanned,
    )
    first = pair[0]
    eval_run = _eval_flow_run_id()
    outcomes = []
    for attempt in range(1, settings.redispatch + 2):
        flow_run: FlowRun = cast(  # sync call: a FlowRun, never the coroutine
            "FlowRun",
            run_deployment(
                settings.deployment,
                parameters={"request": request.model_dump(mode="json", by_alias=True)},
                flow_run_name=f"{first.task_id}#{first.repetition} {run_dir.run_id} (attempt {attempt})",
                poll_interval=settings.poll_s,
                tags=[PAIR_TAG, f"run:{run_dir.run_id}"],
                idempotency_key=f"{eval_run}:{first.pair_id}:attempt-{attempt}",
                as_subflow=True,
            ),
        )
        state = flow_run.state
        if state is not None and state.is_completed():
            return read_pair_records(run_dir, pair)
        state_name = state.name if state is not None else "unknown"
        outcomes.append(f"{flow_run.id}: {state_name}")
        retryable = state is not None and (state.is_crashed() or state.is_failed())
        logger.warning(
            "pair %s: flow run %s ended %s (attempt %d)%s",
            first.pair_id,
            flow_run.id,
            state_name,
            attempt,
            "; dispatching it again" if retryable and attempt <= settings.redispatch else "",
        )
        if not retryable:
            break
    raise ExecutionError(
        f"pair {first.pair_id} did not complete on the work pool: {'; '.join(outcomes)}",
        reason=ReasonCode.EXECUTION_FAILED,
    )
