"""The embedded default store: a local directory with the same layout as S3.

Objects are plain files under the root (``<root>/runs/<run_id>/...``), so a
local store is also a browsable run directory. Writes go to a temporary file in
the target directory and are renamed into place (atomic on POSIX). The recorded
SHA-256 is the file's content hash, recomputed on ``head``: a file changed on
disk therefore no longer matches its manifest entry, and ``pull`` refuses it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from pairlab.adapters.store.base import ObjectInfo, check_key, sha256_file
from pairlab.core.errors import PublishError, ReasonCode


class LocalStore:
    def __init__(self, root: Path) -> None:
        self.root = root.expanduser().absolute()
        self.url = self.root.as_uri()

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*check_key(key).split("/"))

    def put_file(self, key: str, path: Path, *, sha256: str) -> None:
        del sha256  # the file's content is its own record
        target = self._path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".upload-", dir=target.parent)
            os.close(fd)
            shutil.copyfile(path, tmp)
            os.replace(tmp, target)
        except OSError as exc:
            raise PublishError(
                f"cannot write {key} under {self.root}: {exc}", reason=ReasonCode.PUBLISH_FAILED
            ) from exc

    def put_bytes(self, key: str, data: bytes) -> None:
        target = self._path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".upload-", dir=target.parent)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, target)
        except OSError as exc:
            raise PublishError(
                f"cannot write {key} under {self.root}: {exc}", reason=ReasonCode.PUBLISH_FAILED
            ) from exc

    def head(self, key: str) -> ObjectInfo | None:
        path = self._path(key)
        if not path.is_file():
            return None
        stat = path.stat()
        return ObjectInfo(
            key=key,
            size=stat.st_size,
            sha256=sha256_file(path),
            last_modified=datetime.fromtimestamp(stat.st_mtime, tz=UTC),
        )

    def get_bytes(self, key: str) -> bytes | None:
        path = self._path(key)
        return path.read_bytes() if path.is_file() else None

    def download(self, key: str, dest: Path) -> None:
        path = self._path(key)
        if not path.is_file():
            raise PublishError(f"{key}: no such object in {self.url}", reason=ReasonCode.NOT_FOUND)
        shutil.copyfile(path, dest)

    def list_objects(self, prefix: str) -> Iterator[ObjectInfo]:
        directory = prefix.rpartition("/")[0]
        base = self.root.joinpath(*[p for p in directory.split("/") if p])
        if not base.is_dir():
            return
        for path in sorted(base.rglob("*")):
            if not path.is_file() or path.name.startswith(".upload-"):
                continue
            key = path.relative_to(self.root).as_posix()
            if key.startswith(prefix):
                stat = path.stat()
                yield ObjectInfo(
                    key=key,
                    size=stat.st_size,
                    sha256=None,
                    last_modified=datetime.fromtimestamp(stat.st_mtime, tz=UTC),
                )

    def list_children(self, prefix: str) -> list[str]:
        base = self.root.joinpath(*[p for p in prefix.split("/") if p])
        if not base.is_dir():
            return []
        return sorted(p.name for p in base.iterdir() if p.is_dir())

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)
