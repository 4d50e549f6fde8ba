"""The episode's findings graph on disk: ``$PAIRLAB_GRAPH_DIR/findings.jsonl`` (append-only,
one event a line, under an exclusive lock) and ``retrieval.json`` (the run's holdout
settings, written by pairlab when it seeds the graph). Anchors are checked and hashed
against the workspace here; the state is folded by pairlab.core.findings.graph."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from pairlab.core.findings.contract import Anchor
from pairlab.core.findings.graph import GraphState, fold
from pairlab.core.findings.retrieval import DEFAULT_HOLDOUT_SHARE
from pairlab.intervention.workspace import PathRefused, read_workspace_text, resolve_in_workspace

GRAPH_FILE: Final = "findings.jsonl"
RETRIEVAL_SETTINGS_FILE: Final = "retrieval.json"


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


@contextmanager
def locked(path: Path) -> Iterator[int]:
    """An exclusive lock on ``<path>.lock`` (servers of one episode may share the graph)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def append_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    data = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(data.encode("utf-8"))
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def read_jsonl(path: Path) -> tuple[list[dict[str, Any]], int]:
    """(objects, unreadable line count): a torn or foreign line is counted, never fatal."""
    if not path.is_file():
        return [], 0
    rows: list[dict[str, Any]] = []
    bad = 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(value, dict):
            rows.append(value)
        else:
            bad += 1
    return rows, bad


@dataclass(frozen=True)
class RetrievalSettings:
    holdout_share: float = DEFAULT_HOLDOUT_SHARE
    holdout_seed: str = "0"


class GraphStore:
    def __init__(self, graph_dir: Path, workspace_root: Path, workdir: Path) -> None:
        self.dir = graph_dir
        self.path = graph_dir / GRAPH_FILE
        self.root = workspace_root
        self.workdir = workdir

    def settings(self) -> RetrievalSettings:
        path = self.dir / RETRIEVAL_SETTINGS_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return RetrievalSettings()
        share = data.get("holdoutShare", DEFAULT_HOLDOUT_SHARE)
        share = (
            share if isinstance(share, int | float) and 0 <= share <= 1 else DEFAULT_HOLDOUT_SHARE
        )
        return RetrievalSettings(float(share), str(data.get("holdoutSeed", "0")))

    def state(self) -> GraphState:
        events, bad = read_jsonl(self.path)
        state = fold(events)
        state.invalid_lines += bad
        return state

    def append(self, events: list[dict[str, Any]]) -> None:
        append_jsonl(self.path, events)

    # -- anchors ---------------------------------------------------------------

    def anchor_problem(self, anchor: Anchor) -> str | None:
        """None when the anchor is a real file (and symbol) of the workspace."""
        try:
            found = read_workspace_text(self.root, self.workdir, anchor.path)
        except PathRefused as exc:
            return str(exc)
        if anchor.symbol and not re.search(rf"\b{re.escape(anchor.symbol)}\b", found.text):
            return f"symbol {anchor.symbol!r} does not occur in {found.label}"
        return None

    def file_hash(self, path: str) -> str | None:
        """SHA-256 of an anchored file now, or None when it is gone or outside."""
        try:
            resolved, _ = resolve_in_workspace(self.root, self.workdir, path)
            return hashlib.sha256(resolved.read_bytes()).hexdigest()
        except (PathRefused, OSError):
            return None
