"""What an operator following a run in the Prefect UI sees besides artifacts: the run's
name (pairlab's run id) and one-line descriptions of pairs and failed episodes for its
Logs tab.

`pairlab serve` keeps the console quiet, yet the flow-run loggers send INFO to the
server (``pairlab/cli/run.py``), so these lines reach the Logs tab.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pairlab.adapters.run.directory import RunDir
from pairlab.core.errors import PairlabError
from pairlab.core.schedule import PlannedEpisode
from pairlab.core.schemas.episode import EpisodeRecord

if TYPE_CHECKING:
    from prefect.client.schemas.objects import State

_log = logging.getLogger(__name__)


def name_flow_run(name: str) -> None:
    """Rename the current flow run (when there is one on a server) to ``name``."""
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run

    run_id = flow_run.get_id()
    if run_id is None or flow_run.get_name() == name:
        return
    try:
        with get_client(sync_client=True) as client:
            client.update_flow_run(UUID(run_id), name=name)
    except Exception as exc:
        _log.warning("could not rename flow run %s to %s: %s", run_id, name, exc)


def show_refusal(run_id: str, exc: PairlabError) -> None:
    """A run refused before its first episode, said where the operator looks: one ERROR line
    in the Logs tab and a ``refused-<run>`` artifact (the reason code and what to change)."""
    from prefect import get_run_logger
    from prefect.artifacts import create_markdown_artifact

    line = f"run {run_id} refused [{exc.reason}]: {exc.message}"
    get_run_logger().error(line)
    create_markdown_artifact(
        markdown=f"**Refused** — run {run_id} (`{exc.reason}`)\n\n{exc.message}\n",
        key=_key("refused", run_id),
        description=line[:500],
    )


def show_interruption(run_id: str, run_dir: RunDir) -> None:
    """An eval stopped mid-run (SIGTERM, Ctrl-C): the last Logs-tab line and an
    ``interrupted-<run>`` artifact say how to resume and what is already recorded."""
    recorded = len(run_dir.completed())
    planned = _planned_episodes(run_dir)
    of = f" of {planned}" if planned is not None else ""
    line = (
        f"run {run_id} interrupted: resume with Run Id {run_id} (its frozen settings are "
        f"kept); {recorded}{of} episodes recorded in {run_dir.path.resolve()}"
    )
    _announce_stop(
        run_id,
        "interrupted",
        line,
        "a resume runs only the rest.",
        then=lambda: _set_cancelled(f"interrupted: resume with Run Id {run_id}"),
    )


def budget_stop_message(run_id: str) -> str:
    """The final state's message of a run stopped at its budget ceiling."""
    return f"budget-exhausted: resume with Run Id {run_id} and a higher ceiling"


def show_budget_stop(run_id: str, result: dict[str, Any]) -> State[Any]:
    """A run stopped at its budget ceiling, after its report is published: the last
    Logs-tab line and a ``budget-exhausted-<run>`` artifact (spent, ceiling, episodes
    recorded of planned, how to resume); returns the Cancelled state the flow ends in,
    the flow's result as its data."""
    from prefect.states import Cancelled

    from pairlab.core.budget import budget_stop_words

    message = budget_stop_message(run_id)
    line = (
        f"run {run_id} {message}: {budget_stop_words(result['budget'])}; "
        f"the partial report is published ({result['report']})"
    )
    _announce_stop(
        run_id,
        "budget-exhausted",
        line,
        "a resume with the same Run Id and a higher ceiling runs only the rest.",
    )
    return Cancelled(message=message, data=result)


def _announce_stop(
    run_id: str, kind: str, line: str, resume: str, then: Callable[[], None] | None = None
) -> None:
    """A run that stopped before its plan's end, said where the operator looks: a
    ``<kind>-<run>`` artifact (``line``, what is kept, how a resume goes on), then ``then``
    (e.g. the server state), and — whatever failed before — ``line`` as the run's last
    Logs-tab line (WARNING)."""
    from prefect import get_run_logger
    from prefect.artifacts import create_markdown_artifact

    title = kind.replace("-", " ").capitalize()
    try:
        create_markdown_artifact(
            markdown=f"**{title}** — {line}\n\nRecorded episodes are kept and never run "
            f"again; {resume}\n",
            key=_key(kind, run_id),
            description=line[:500],
        )
        if then is not None:
            then()
    finally:
        get_run_logger().warning(line)


def _set_cancelled(message: str) -> None:
    """The run's state on the server: Cancelled, saying how to resume. Pairs already running
    finish in their threads before the process can exit, and a `pairlab serve` stopping
    does not wait for that: without this the run could stay Running on the server."""
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run
    from prefect.states import Cancelled

    flow_run_id = flow_run.get_id()
    if flow_run_id is None:
        return
    with get_client(sync_client=True) as client:
        client.set_flow_run_state(UUID(flow_run_id), Cancelled(message=message), force=True)


def _planned_episodes(run_dir: RunDir) -> int | None:
    import json

    path = run_dir.path / "schedule.json"
    if not path.exists():
        return None
    entries = json.loads(path.read_bytes()).get("entries")
    return len(entries) if isinstance(entries, list) else None


def _key(prefix: str, run_id: str) -> str:
    return f"{prefix}-" + "".join(c if c.isalnum() else "-" for c in run_id.lower())[:60]


def pair_text(pair: Sequence[PlannedEpisode]) -> str:
    """``fix-median rep 0 (optimizer → baseline)``; several tasks (a quota block): joined.
    Repetitions count from 0, as in the episode ids (``<run>:<task>:<rep>:<arm>``)."""
    first = pair[0]
    tasks = sorted({p.task_id for p in pair})
    reps = sorted({p.repetition for p in pair})
    arms = " → ".join(dict.fromkeys(p.arm for p in pair))
    rep = f"rep {reps[0]}" if len(reps) == 1 else f"reps {reps[0]}–{reps[-1]}"
    name = first.task_id if len(tasks) == 1 else ", ".join(tasks)
    return f"{name} {rep} ({arms})"


def failure_reason(record: EpisodeRecord) -> str | None:
    """Why an episode did not count as a correct success (None when it did)."""
    if record.success and record.correct:
        return None
    if record.excluded:
        return f"excluded: {record.excluded_reason or 'no reason recorded'}"
    if record.timed_out:
        return "timed out"
    if record.success is False:
        return f"agent run failed (exit code {record.exit_code})"
    if record.correct is False:
        failed = [c.name for c in record.grader_checks or [] if c.passed is False]
        return "incorrect: " + (", ".join(failed) if failed else "grader said no")
    return "correctness not graded"
