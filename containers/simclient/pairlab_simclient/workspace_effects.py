"""What the simulated agent does to its workspace and graph/state directories.

Solving overlays every file of ``$PAIRLAB_TASK_SOLUTION`` onto the workspace
(same relative paths; ``.final_answer`` is read, not copied). Retrieval arms read
findings from ``$PAIRLAB_GRAPH_DIR``; every arm leaves a marker there so tests
can see that graph state is fresh per episode.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

FINAL_ANSWER_FILE = ".final_answer"
GRAPH_MARKER = "simclient-marker.json"


def apply_solution(solution_dir: Path, workspace: Path) -> list[str]:
    """Copy the solution's files over the workspace; returns the relative paths written."""
    written: list[str] = []
    for path in sorted(solution_dir.rglob("*")):
        if not path.is_file() or path.name == FINAL_ANSWER_FILE:
            continue
        rel = path.relative_to(solution_dir)
        target = workspace / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        written.append(rel.as_posix())
    return written


def read_final_answer(solution_dir: Path | None, declared: str | None = None) -> str:
    """The task's declared answer (PAIRLAB_TASK_FINAL_ANSWER) or the solution's .final_answer."""
    if declared and declared.strip():
        return " ".join(declared.split())
    if solution_dir is not None:
        try:
            text = (solution_dir / FINAL_ANSWER_FILE).read_text(encoding="utf-8").strip()
        except OSError:
            text = ""
        if text:
            return " ".join(text.split())
    return "done"


def _findings_in(data: object) -> list[dict[str, Any]]:
    if isinstance(data, list):
        return [f for item in data for f in _findings_in(item)]
    if isinstance(data, dict):
        if isinstance(data.get("findings"), list):
            return _findings_in(data["findings"])
        if isinstance(data.get("id") or data.get("findingId"), str):
            return [data]
    return []


def read_graph_findings(graph_dir: Path) -> list[str]:
    """Finding ids in *.json / *.jsonl files of the graph dir (the marker excluded)."""
    ids: list[str] = []
    for path in sorted(graph_dir.rglob("*")):
        if (
            not path.is_file()
            or path.name == GRAPH_MARKER
            or path.suffix not in (".json", ".jsonl")
        ):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        docs: list[object] = []
        if path.suffix == ".jsonl":
            for line in text.splitlines():
                try:
                    docs.append(json.loads(line))
                except ValueError:
                    continue
        else:
            try:
                docs.append(json.loads(text))
            except ValueError:
                continue
        for doc in docs:
            for finding in _findings_in(doc):
                fid = str(finding.get("id") or finding.get("findingId"))
                if fid not in ids:
                    ids.append(fid)
    return ids


def read_previous_marker(graph_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((graph_dir / GRAPH_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_graph_marker(graph_dir: Path, marker: dict[str, Any]) -> None:
    graph_dir.mkdir(parents=True, exist_ok=True)
    (graph_dir / GRAPH_MARKER).write_text(
        json.dumps(marker, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
