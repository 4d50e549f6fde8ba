"""Which files a tool may read: regular UTF-8 text files inside the episode's workspace.

A path is resolved against the working directory (relative) or taken as given
(absolute), then every symlink is resolved; the result must lie under the
workspace root. Anything else is refused with a message naming the path and
the reason -- the client shows it to the model as the tool's error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

MAX_FILE_BYTES: Final = 16 * 1024 * 1024


class PathRefused(Exception):
    """A requested path the tool will not read; ``str(exc)`` is the message for the model."""


@dataclass(frozen=True)
class WorkspaceFile:
    path: Path  # resolved, inside the root
    label: str  # relative to the workspace root, POSIX separators
    text: str


def resolve_in_workspace(root: Path, workdir: Path, requested: object) -> tuple[Path, str]:
    """The resolved path and its label, or :class:`PathRefused`."""
    if not isinstance(requested, str) or not requested.strip():
        raise PathRefused("path must be a non-empty string (a path relative to the workspace)")
    if "\x00" in requested:
        raise PathRefused("path contains a NUL character")
    candidate = Path(requested)
    if not candidate.is_absolute():
        candidate = workdir / candidate
    resolved = Path(os.path.realpath(candidate))
    if resolved != root and root not in resolved.parents:
        raise PathRefused(
            f"refused: {requested!r} is outside the workspace {root} (resolved to {resolved})"
        )
    return resolved, resolved.relative_to(root).as_posix() or "."


def read_workspace_text(root: Path, workdir: Path, requested: object) -> WorkspaceFile:
    """Read a text file the policy allows, or raise :class:`PathRefused`."""
    path, label = resolve_in_workspace(root, workdir, requested)
    if not path.exists():
        raise PathRefused(f"no such file in the workspace: {label}")
    if not path.is_file():
        raise PathRefused(f"not a regular file: {label}")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise PathRefused(f"{label} is {size} bytes; files above {MAX_FILE_BYTES} are refused")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PathRefused(f"cannot read {label}: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PathRefused(f"{label} is not a UTF-8 text file") from exc
    return WorkspaceFile(path, label, text)
