"""Listing what an episode left behind: every collected regular file with its SHA-256.

Symlinks are never followed (an agent could point one anywhere on the host);
they are kept as links in the copy and left out of the listing.
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
