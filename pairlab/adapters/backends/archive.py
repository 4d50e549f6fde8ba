"""Tar archives in and out of containers: populating fresh volumes, collecting what an episode wrote.

Going in, every entry is owned by the container's non-root user so the agent
can write its workspace and HOME. Coming out, members that would land outside
the destination (absolute paths, ``..``, links pointing out) are skipped, never
extracted, and ownership is reset to the collecting user.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Collection, Iterable
from pathlib import Path


def pack_dir(root: Path, *, uid: int, gid: int) -> bytes:
    """A tar of the *contents* of ``root`` (top-level names relative to it), owned by uid:gid."""

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
        return info

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for child in sorted(root.iterdir()):
            tar.add(child, arcname=child.name, recursive=True, filter=owned)
    return buf.getvalue()


class _ChunkReader(io.RawIOBase):
    """A file-like view over the byte chunks ``get_archive`` streams."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def _strip(name: str, count: int) -> str | None:
    """``name`` without its first ``count`` path components (None: nothing left)."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    rest = parts[count:]
    return "/".join(rest) if rest else None


def unpack_stream(
    chunks: Iterable[bytes],
    dest: Path,
    *,
    strip_components: int = 0,
    include: Collection[str] | None = None,
) -> list[str]:
    """Extract a streamed tar into ``dest``; returns the names of skipped (unsafe) members.

    ``strip_components`` drops that many leading path components from every member
    name (and from hard-link targets), as ``tar --strip-components`` does; members
    with nothing left (the stripped directories themselves) are not extracted.
    ``include`` keeps only members whose (stripped) first component it names; the
    others are not extracted and not reported (they are outside what was asked for).
    """
    dest.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    uid, gid = os.getuid(), os.getgid()

    def safe(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        original = member.name  # reported as the archive named it
        if strip_components:
            name = _strip(member.name, strip_components)
            if name is None:
                return None
            changes: dict[str, str] = {"name": name}
            if member.islnk():
                target = _strip(member.linkname, strip_components)
                if target is None:
                    skipped.append(original)
                    return None
                changes["linkname"] = target
            member = member.replace(**changes, deep=False)  # type: ignore[arg-type]
        if include is not None and member.name.split("/", 1)[0] not in include:
            return None
        try:
            checked = tarfile.data_filter(member, path)
        except tarfile.FilterError:
            skipped.append(original)
            return None
        return checked.replace(uid=uid, gid=gid, uname="", gname="", deep=False)

    stream = io.BufferedReader(_ChunkReader(chunks), buffer_size=1 << 20)
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        tar.extractall(dest, filter=safe)
    return skipped
