"""Grading an episode against its task's graders (DESIGN 5.3).

Each grader yields one :class:`GraderCheck`: ``passed`` True/False when the
grader ran, and ``None`` (with the reason in ``detail``) when it could not run
at all -- a grader infrastructure error, which the suite's exclusion rule
``grader-infrastructure-error`` then applies to. A grader never passes silently.

* ``command``: argv run in the workspace by the backend (exit 0 = pass). Could
  not start, not found (126/127) or OOM-killed -> None; timed out -> False (the
  work under test hung).
* ``final_answer_includes``/``_excludes``: case-sensitive substrings of the
  agent's final answer (not of everything it printed). No final answer -> False:
  an agent that answered nothing did not answer correctly.
* ``max_delivered_tokens``: None when delivered tokens were not measured.
* ``graph_finding``: the finding id appears (as a whole token) in a file name or
  file of the episode's graph dir, searched inside the workspace sandbox.
"""

from __future__ import annotations

from pairlab.adapters.backends.base import ExecutionBackend, PreparedEpisode, RunOutcome
from pairlab.core.errors import PairlabError
from pairlab.core.schemas.catalog import (
    CommandGrader,
    FinalAnswerGrader,
    GraphFindingGrader,
    MaxDeliveredTokensGrader,
    TaskEntry,
)
from pairlab.core.schemas.episode import GraderCheck

GRAPH_SEARCH_TIMEOUT_S = 60.0
_DETAIL_TAIL = 400
_NOT_FOUND = 3

# Exit 0 found, 1 not found, 3 no graph dir (cannot grade). stdlib only.
GRAPH_SEARCH = """
import os, re, sys, pathlib
root = pathlib.Path(os.environ.get("PAIRLAB_GRAPH_DIR", ""))
if not os.environ.get("PAIRLAB_GRAPH_DIR") or not root.is_dir():
    sys.exit(3)
pattern = re.compile(rb"(?<![\\w.-])" + re.escape(sys.argv[1].encode()) + rb"(?![\\w.-])")
for path in sorted(root.rglob("*")):
    if pattern.search(path.name.encode()):
        sys.exit(0)
    if path.is_file() and not path.is_symlink():
        try:
            if pattern.search(path.read_bytes()):
                sys.exit(0)
        except OSError:
            pass
sys.exit(1)
"""


def _tail(outcome: RunOutcome) -> str:
    text = (outcome.stderr.strip() or outcome.stdout.strip())[-_DETAIL_TAIL:]
    return f": {text}" if text else ""


def _exec(
    backend: ExecutionBackend, prepared: PreparedEpisode, argv: list[str], timeout_s: float
) -> RunOutcome | str:
    try:
        return backend.exec_in_workspace(prepared, argv, timeout_s)
    except PairlabError as exc:
        return f"grader infrastructure error: {exc.message}"


def _command_check(
    backend: ExecutionBackend, prepared: PreparedEpisode, grader: CommandGrader
) -> GraderCheck:
    def check(passed: bool | None, detail: str) -> GraderCheck:
        return GraderCheck(name=grader.name, kind=grader.type, passed=passed, detail=detail)

    outcome = _exec(backend, prepared, list(grader.run), grader.timeout_s)
    if isinstance(outcome, str):
        return check(None, outcome)
    if outcome.error is not None:
        return check(None, f"grader could not run: {outcome.error}")
    if outcome.oom_killed:
        return check(None, "grader was OOM-killed")
    if outcome.timed_out:
        return check(False, f"grader timed out after {grader.timeout_s:g} s")
    if outcome.exit_code in (126, 127):
        return check(
            None, f"grader command not runnable (exit {outcome.exit_code}){_tail(outcome)}"
        )
    if outcome.exit_code == 0:
        return check(True, "exit 0")
    return check(False, f"exit {outcome.exit_code}{_tail(outcome)}")


def _final_answer_check(grader: FinalAnswerGrader, final_answer: str | None) -> GraderCheck:
    if final_answer is None:
        return GraderCheck(
            name=grader.name, kind=grader.type, passed=False, detail="no final answer"
        )
    if grader.type == "final_answer_includes":
        missing = [v for v in grader.values if v not in final_answer]
        detail = f"missing {missing}" if missing else "all present"
        return GraderCheck(name=grader.name, kind=grader.type, passed=not missing, detail=detail)
    present = [v for v in grader.values if v in final_answer]
    detail = f"present {present}" if present else "none present"
    return GraderCheck(name=grader.name, kind=grader.type, passed=not present, detail=detail)


def _delivered_check(grader: MaxDeliveredTokensGrader, delivered: int | None) -> GraderCheck:
    if delivered is None:
        return GraderCheck(
            name=grader.name,
            kind=grader.type,
            passed=None,
            detail="delivered tokens not measured",
        )
    return GraderCheck(
        name=grader.name,
        kind=grader.type,
        passed=delivered <= grader.max,
        detail=f"delivered {delivered} <= max {grader.max}"
        if delivered <= grader.max
        else f"delivered {delivered} > max {grader.max}",
    )


def _graph_check(
    backend: ExecutionBackend, prepared: PreparedEpisode, grader: GraphFindingGrader
) -> GraderCheck:
    def check(passed: bool | None, detail: str) -> GraderCheck:
        return GraderCheck(name=grader.name, kind=grader.type, passed=passed, detail=detail)

    argv = ["python3", "-c", GRAPH_SEARCH, grader.finding_id]
    outcome = _exec(backend, prepared, argv, GRAPH_SEARCH_TIMEOUT_S)
    if isinstance(outcome, str):
        return check(None, outcome)
    if outcome.error is not None or outcome.timed_out or outcome.exit_code not in (0, 1):
        reason = outcome.error or (
            "timed out" if outcome.timed_out else f"exit {outcome.exit_code}{_tail(outcome)}"
        )
        if outcome.exit_code == _NOT_FOUND:
            reason = "the episode has no graph directory"
        return check(None, f"graph search could not run: {reason}")
    if outcome.exit_code == 0:
        return check(True, f"finding {grader.finding_id} in the graph")
    return check(False, f"finding {grader.finding_id} not in the graph")


def grade(
    backend: ExecutionBackend,
    prepared: PreparedEpisode,
    task: TaskEntry,
    final_answer: str | None,
    delivered_tokens: int | None,
) -> list[GraderCheck]:
    checks: list[GraderCheck] = []
    for grader in task.graders:
        if isinstance(grader, CommandGrader):
            checks.append(_command_check(backend, prepared, grader))
        elif isinstance(grader, FinalAnswerGrader):
            checks.append(_final_answer_check(grader, final_answer))
        elif isinstance(grader, MaxDeliveredTokensGrader):
            checks.append(_delivered_check(grader, delivered_tokens))
        else:
            checks.append(_graph_check(backend, prepared, grader))
    return checks
