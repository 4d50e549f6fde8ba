"""Every task of the core suite is solvable through the whole episode path.

The simulator is told to always solve (solve_p 1.0) or never solve (0.0); the
real graders then run on the episode's workspace. A task whose graders can
never pass with the simulator (e.g. an answer grader the simulator cannot
satisfy) would make every cohort of that task meaningless, so this guards the
demo as much as the catalog.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pairlab.adapters.paths import catalog_dir
from pairlab.cli import app
from pairlab.core.schemas.catalog import load_suite

TASKS = [t.id for t in load_suite(catalog_dir(), "core").tasks]


def _run(task_id: str, solve_p: float, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.setenv("PAIRLAB_SIM_EFFECTS", json.dumps({"full": {"solve_p": solve_p}}))
    result = CliRunner().invoke(
        app, ["episode", "run", "--profile", "sim", "--task", task_id, "--arm", "full", "--json"]
    )
    assert result.stdout, result.output
    payload: dict[str, object] = json.loads(result.stdout)
    return payload


@pytest.mark.parametrize("task_id", TASKS)
def test_solved_episode_passes_every_grader(task_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run(task_id, 1.0, monkeypatch)
    assert out["exit_code"] == 0
    checks = out["grader_checks"]
    assert isinstance(checks, list) and checks
    assert all(c["passed"] is True for c in checks), checks


@pytest.mark.parametrize("task_id", TASKS)
def test_unsolved_episode_fails_a_grader(task_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run(task_id, 0.0, monkeypatch)
    checks = out["grader_checks"]
    assert isinstance(checks, list)
    assert any(c["passed"] is False for c in checks), checks
