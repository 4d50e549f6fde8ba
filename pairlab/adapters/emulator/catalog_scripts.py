"""Catalog tasks as scripts for the scripted model (reads catalog/tasks, fixtures, solutions).

A task's reference solution is the set of files under ``catalog/solutions/<name>/``
overlaid on the fixture (catalog/README.md); each becomes a :class:`FileChange`
(the fixture's content before, the solution's after; a file absent from the fixture
is created), with paths relative to the task's working directory. Unchanged files the
prompt names by path are the script's context (read before the edits).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from pairlab.adapters.paths import catalog_dir as default_catalog_dir
from pairlab.core.emulator.edits import FileChange
from pairlab.core.emulator.scripted_model import TaskScript
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.findings.contract import normalize_text
from pairlab.core.schemas.catalog import TaskEntry, load_task

README_NAMES = ("README.md", "README.rst", "README.txt", "README")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(
            f"{path}: cannot read as UTF-8 text ({exc})", reason=ReasonCode.INVALID_CATALOG
        ) from exc


def load_task_entry(catalog: Path, task_id: str) -> TaskEntry:
    path = catalog / "tasks" / f"{task_id}.yaml"
    if not path.is_file():
        raise InvalidInputError(
            f"unknown task '{task_id}' (no {path})", reason=ReasonCode.UNKNOWN_TASK
        )
    return load_task(path)


def build_task_script(catalog: Path, task: TaskEntry) -> TaskScript:
    fixture = catalog / "fixtures" / task.fixture
    solution = catalog / "solutions" / task.solution
    workdir = fixture / task.workspace
    if not fixture.is_dir() or not solution.is_dir():
        raise InvalidInputError(
            f"task '{task.id}': fixture {fixture} or solution {solution} is missing",
            reason=ReasonCode.INVALID_CATALOG,
        )
    changes: list[FileChange] = []
    for src in sorted(p for p in solution.rglob("*") if p.is_file()):
        rel_root = src.relative_to(solution)
        original = fixture / rel_root
        rel = Path(os.path.relpath(fixture / rel_root, workdir)).as_posix()
        before = _read_text(original) if original.is_file() else None
        after = _read_text(src)
        if before != after:
            changes.append(FileChange(path=rel, before=before, after=after))
    readme = next((n for n in README_NAMES if (workdir / n).is_file()), None)
    changed = {c.path for c in changes}
    named = sorted(
        rel
        for p in workdir.rglob("*")
        if p.is_file()
        and (rel := p.relative_to(workdir).as_posix()) not in changed
        and rel.split("/")[0] != "grader"
        and rel != readme
        and re.search(rf"(?<![\w/.-]){re.escape(rel)}(?![\w/-])", task.prompt)
    )
    return TaskScript(
        task_id=task.id,
        changes=tuple(changes),
        readme=readme,
        context=tuple(named),
        final_answer=task.final_answer,
        query=task.prompt,
        explore=tuple(task.explore),
        finding_effects=(
            *((normalize_text(f.claim), f.effect) for f in task.seed_findings),
            *((normalize_text(c.claim), c.effect) for c in task.carried_effects),
        ),
        harvest=tuple(
            tuple(
                sorted(
                    {
                        "claim": f.claim,
                        "anchors": list(f.anchors),
                        "evidence": f.evidence,
                        "applicability": f.applicability,
                        "confidenceLabel": f.confidence_label,
                        "scope": f.scope,
                        "invalidators": list(f.invalidators),
                    }.items()
                )
            )
            for f in task.harvest
        ),
    )


@lru_cache(maxsize=256)
def _cached(catalog: str, task_id: str, stamp: float) -> TaskScript:
    root = Path(catalog)
    return build_task_script(root, load_task_entry(root, task_id))


def task_script(task_id: str, catalog: Path | None = None) -> TaskScript:
    """The script of one catalog task (cached while the task file is unchanged)."""
    root = (catalog or default_catalog_dir()).resolve()
    path = root / "tasks" / f"{task_id}.yaml"
    stamp = path.stat().st_mtime if path.is_file() else 0.0
    return _cached(str(root), task_id, stamp)


__all__ = ["build_task_script", "load_task_entry", "task_script"]
