"""The core suite: every task loads, and its graders separate unsolved from solved.

For each task the fixture is copied to a temporary directory, the command
graders must fail there; the reference solution is overlaid and they must pass.
Final-answer graders are checked against the task's declared final answer.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pairlab.core.schemas.catalog import (
    CommandGrader,
    FinalAnswerGrader,
    LoadedSuite,
    TaskEntry,
    load_suite,
    load_task,
)
from tests.support import CATALOG_DIR

SUITE = load_suite(CATALOG_DIR, "core")
TASK_IDS = [t.id for t in SUITE.tasks]


def run_command_graders(suite: LoadedSuite, task: TaskEntry, root: Path) -> list[int]:
    workdir = root / task.workspace
    codes = []
    for grader in task.graders:
        if isinstance(grader, CommandGrader):
            proc = subprocess.run(
                grader.run,
                cwd=workdir,
                capture_output=True,
                text=True,
                timeout=grader.timeout_s,
                check=False,
            )
            codes.append(proc.returncode)
    return codes


def overlay(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, dirs_exist_ok=True)


def test_core_suite_covers_at_least_six_families() -> None:
    assert len(SUITE.tasks) >= 6
    assert len({t.family for t in SUITE.tasks}) >= 6
    assert {r.when for r in SUITE.suite.exclusion_rules} == {
        "infrastructure-failure-before-start",
        "grader-infrastructure-error",
    }


def test_every_task_file_in_catalog_validates() -> None:
    for path in sorted((CATALOG_DIR / "tasks").glob("*.yaml")):
        assert load_task(path).id == path.stem


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_grader_fails_on_fixture_and_passes_with_solution(task_id: str, tmp_path: Path) -> None:
    task = SUITE.task(task_id)
    assert any(isinstance(g, CommandGrader) for g in task.graders), (
        "every task needs a command grader"
    )
    root = tmp_path / "ws"
    shutil.copytree(SUITE.fixture_path(task), root)
    unsolved = run_command_graders(SUITE, task, root)
    assert all(code != 0 for code in unsolved), (
        f"grader passes on the untouched fixture: {unsolved}"
    )

    overlay(SUITE.solution_path(task), root / task.workspace)
    solved = run_command_graders(SUITE, task, root)
    assert solved and all(code == 0 for code in solved), (
        f"grader fails on fixture+solution: {solved}"
    )
    expected = {p.relative_to(root) for p in root.rglob("*")}
    run_command_graders(SUITE, task, root)
    left = {p.relative_to(root) for p in root.rglob("*")}
    assert left == expected, f"graders must leave the workspace as they found it: {left ^ expected}"
    assert not list(root.rglob("__pycache__")), "graders must not leave bytecode in the workspace"


@pytest.mark.parametrize(
    "task_id",
    [t.id for t in SUITE.tasks if any(isinstance(g, FinalAnswerGrader) for g in t.graders)],
)
def test_declared_final_answer_satisfies_final_answer_graders(task_id: str) -> None:
    task = SUITE.task(task_id)
    for grader in task.graders:
        if isinstance(grader, FinalAnswerGrader):
            assert task.final_answer is not None
            hits = [v in task.final_answer for v in grader.values]
            if grader.type == "final_answer_includes":
                assert all(hits), grader
            else:
                assert not any(hits), grader


def test_solutions_only_touch_paths_a_workspace_can_hold() -> None:
    for task in SUITE.tasks:
        files = [p for p in SUITE.solution_path(task).rglob("*") if p.is_file()]
        assert files, f"{task.id}: empty solution"
        for path in files:
            rel = path.relative_to(SUITE.solution_path(task))
            assert not rel.parts[0].startswith("grader"), (
                f"{task.id}: a solution must not edit its grader"
            )
