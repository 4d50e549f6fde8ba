"""The object-store contract shared by the local-directory and S3 stores.

A store is a flat key space (``runs/<run_id>/...``). Every object is written with
its content SHA-256 recorded next to it (S3: ``x-amz-meta-sha256``; the local
store recomputes it from the file), so a reader can check integrity without
trusting the server. Writes are whole-object and atomic from a reader's view.
``open_store(url)`` in ``pairlab.adapters.store`` picks the implementation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from pairlab.core.run_manifest import validate_object_key

HASH_CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    sha256: str | None  # recorded content hash; None when the store holds none
    last_modified: datetime | None
    etag: str | None = None


@runtime_checkable
class Store(Protocol):
    """Whole-object storage with recorded content hashes."""

    url: str

    def put_file(self, key: str, path: Path, *, sha256: str) -> None:
        """Upload the file at ``path`` as ``key``, recording ``sha256``."""
        ...

    def put_bytes(self, key: str, data: bytes) -> None:
        """Upload ``data`` as ``key`` (hash computed and recorded)."""
        ...

    def head(self, key: str) -> ObjectInfo | None:
        """Metadata of ``key``, or None if absent."""
        ...

    def get_bytes(self, key: str) -> bytes | None:
        """The whole object, or None if absent (small objects: manifests)."""
        ...

    def download(self, key: str, dest: Path) -> None:
        """Stream ``key`` into the file ``dest`` (created or truncated)."""
        ...

    def list_objects(self, prefix: str) -> Iterator[ObjectInfo]:
        """Every object whose key starts with ``prefix`` (sha256 may be None: not fetched)."""
        ...

    def list_children(self, prefix: str) -> list[str]:
        """Names of the immediate 'directories' under ``prefix`` (sorted)."""
        ...

    def delete(self, key: str) -> None:
        """Remove ``key``; absent is fine."""
        ...


def check_key(key: str) -> str:
    return validate_object_key(key)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
