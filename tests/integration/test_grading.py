"""Grading on a real backend (local processes): every grader kind, and no silent pass."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pairlab.adapters.backends import EpisodeSpec, PreparedEpisode
from pairlab.adapters.backends.local import LocalBackend
from pairlab.adapters.episode.grading import grade
from pairlab.core.schemas.catalog import TaskEntry, load_suite
from tests.integration.backend_fixtures import shell_profile
from tests.support import CATALOG_DIR

pytestmark = pytest.mark.timeout(120)


def task_with(graders: list[dict[str, object]]) -> TaskEntry:
    return TaskEntry.model_validate(
        {
            "id": "t",
            "family": "f",
            "prompt": "p",
            "fixture": "x",
            "solution": "y",
            "graders": graders,
        }
    )


@pytest.fixture
def backend(tmp_path: Path) -> LocalBackend:
    return LocalBackend(base_dir=tmp_path / "episodes")


def prepare(backend: LocalBackend, fixture: Path, subdir: str = ".") -> PreparedEpisode:
    spec = EpisodeSpec(
        run_id="g",
        episode_id="g:t:0:baseline",
        pair_id="g:t:0",
        task_id="t",
        arm="baseline",
        prompt="true",
        profile=shell_profile(),
        fixture_dir=fixture,
        workspace_subdir=subdir,
        timeout_s=30,
    )
    return backend.prepare(spec)


@pytest.fixture
def prepared(backend: LocalBackend, tmp_path: Path) -> Iterator[PreparedEpisode]:
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    (fixture / "ok.txt").write_text("ok")
    episode = prepare(backend, fixture)
    yield episode
    backend.cleanup(episode)


def test_catalog_task_fails_unsolved_and_passes_solved(
    backend: LocalBackend, tmp_path: Path
) -> None:
    suite = load_suite(CATALOG_DIR, "core")
    task = next(t for t in suite.tasks if any(g.type == "command" for g in t.graders))
    unsolved = tmp_path / "unsolved"
    shutil.copytree(suite.fixture_path(task), unsolved)
    solved = tmp_path / "solved"
    shutil.copytree(suite.fixture_path(task), solved)
    shutil.copytree(suite.solution_path(task), solved, dirs_exist_ok=True)
    results = {}
    for name, fixture in (("unsolved", unsolved), ("solved", solved)):
        episode = prepare(backend, fixture, task.workspace)
        try:
            results[name] = [
                c
                for c in grade(backend, episode, task, task.final_answer, None)
                if c.kind == "command"
            ]
        finally:
            backend.cleanup(episode)
    assert results["unsolved"] and all(c.passed is False for c in results["unsolved"])
    assert all(c.passed is True for c in results["solved"])


def test_command_grader_that_cannot_run_is_none_not_pass(
    backend: LocalBackend, prepared: PreparedEpisode
) -> None:
    task = task_with(
        [
            {"type": "command", "name": "missing", "run": ["no-such-grader-binary-xyz"]},
            {"type": "command", "name": "ok", "run": ["python3", "-c", "open('ok.txt')"]},
            {"type": "command", "name": "fails", "run": ["python3", "-c", "raise SystemExit(2)"]},
            {
                "type": "command",
                "name": "hangs",
                "run": ["python3", "-c", "while True: pass"],
                "timeout_s": 0.5,
            },
        ]
    )
    checks = {c.name: c for c in grade(backend, prepared, task, None, None)}
    assert checks["missing"].passed is None and "could not run" in (checks["missing"].detail or "")
    assert checks["ok"].passed is True
    assert checks["fails"].passed is False and "exit 2" in (checks["fails"].detail or "")
    assert checks["hangs"].passed is False and "timed out" in (checks["hangs"].detail or "")


def test_final_answer_and_delivered_tokens(
    backend: LocalBackend, prepared: PreparedEpisode
) -> None:
    task = task_with(
        [
            {"type": "final_answer_includes", "name": "inc", "values": ["CACHE_DIR", "~/.cache"]},
            {"type": "final_answer_excludes", "name": "exc", "values": ["TMPDIR"]},
            {"type": "max_delivered_tokens", "name": "max", "max": 100},
        ]
    )
    good = {
        c.name: c.passed for c in grade(backend, prepared, task, "CACHE_DIR, default ~/.cache", 100)
    }
    assert good == {"inc": True, "exc": True, "max": True}
    bad = {c.name: c.passed for c in grade(backend, prepared, task, "TMPDIR and CACHE_DIR", 101)}
    assert bad == {"inc": False, "exc": False, "max": False}
    none = {c.name: c.passed for c in grade(backend, prepared, task, None, None)}
    # no answer is a wrong answer; unmeasured tokens are unknown, never 0
    assert none == {"inc": False, "exc": False, "max": None}


def test_graph_finding(backend: LocalBackend, prepared: PreparedEpisode) -> None:
    graph = Path(prepared.mounts["graph"])
    (graph / "findings.json").write_text('{"findings": [{"id": "F-10"}]}')
    task = task_with(
        [
            {"type": "graph_finding", "name": "has", "finding_id": "F-10"},
            {"type": "graph_finding", "name": "prefix-only", "finding_id": "F-1"},
        ]
    )
    checks = {c.name: c.passed for c in grade(backend, prepared, task, None, None)}
    assert checks == {"has": True, "prefix-only": False}
    shutil.rmtree(graph)
    (missing,) = grade(
        backend, prepared, task_with([{"type": "graph_finding", "finding_id": "F-10"}]), None, None
    )
    assert missing.passed is None and "no graph directory" in (missing.detail or "")
