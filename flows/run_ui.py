"""What an operator following a run in the Prefect UI sees besides artifacts: the run's
name (pairlab's run id) and one-line descriptions of pairs and failed episodes for its
Logs tab.

`pairlab serve` keeps the console quiet, yet the flow-run loggers send INFO to the
server (``pairlab/cli/run.py``), so these lines reach the Logs tab.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from uuid import UUID

from pairlab.core.errors import PairlabError
from pairlab.core.schedule import PlannedEpisode
from pairlab.core.schemas.episode import EpisodeRecord

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
    key = "refused-" + "".join(c if c.isalnum() else "-" for c in run_id.lower())[:60]
    create_markdown_artifact(
        markdown=f"**Refused** — run {run_id} (`{exc.reason}`)\n\n{exc.message}\n",
        key=key,
        description=line[:500],
    )


def pair_text(pair: Sequence[PlannedEpisode]) -> str:
    """``fix-median rep 1 (optimizer → baseline)``; several tasks (a quota block): joined."""
    first = pair[0]
    tasks = sorted({p.task_id for p in pair})
    reps = sorted({p.repetition + 1 for p in pair})
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
