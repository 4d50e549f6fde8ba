"""Listing what an episode left behind: every collected regular file with its SHA-256.

Symlinks are never followed (an agent could point one anywhere on the host) and are
not kept: :func:`list_collected` removes them from the copy, so what an episode leaves
behind is regular files only, as a published run must be (the store refuses links).
A CLI's own helper links count too: Codex 0.163.0 links ``apply_patch`` under
``~/.codex/tmp/arg0-*/``; seen left behind by an episode Codex ended on a provider's
usage limit (exit 1; gone after a normal end), whose run then could not be published.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pairlab.adapters.backends.base import CollectedFile, CollectedFiles

COLLECTED_ROLES = ("home", "state", "graph")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def list_collected(dest: Path) -> CollectedFiles:
    """Every regular file under ``dest`` with its size and digest, after removing every
    symlink from ``dest`` (never followed: the link alone goes)."""
    for link in [p for p in dest.rglob("*") if p.is_symlink()]:
        link.unlink()
    files = [
        CollectedFile(
            path=path.relative_to(dest).as_posix(),
            size_bytes=path.stat().st_size,
            sha256=sha256_file(path),
        )
        for path in sorted(dest.rglob("*"))
        if path.is_file() and not path.is_symlink()
    ]
    return CollectedFiles(dest=dest, files=files)
