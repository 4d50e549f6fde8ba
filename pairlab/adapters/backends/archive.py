"""Tar archives in and out of containers: populating fresh volumes, collecting what an episode wrote.

Going in, every entry is owned by the container's non-root user so the agent
can write its workspace and HOME. Coming out, members that would land outside
the destination (absolute paths, ``..``, links pointing out) are skipped, never
extracted, and ownership is reset to the collecting user.
"""

from __future__ import annotations

import copy
import io
import os
import tarfile
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

# Python's extraction filters (PEP 706) arrived in 3.11.4. Debian 12's own python3 is
# 3.11.2 (the worker image's interpreter, episodes on the Docker backend from a worker):
# there the same checks run from _legacy_data_filter below.
_HAS_FILTERS = hasattr(tarfile, "data_filter")


class _Refused(Exception):
    pass


_FILTER_ERRORS: tuple[type[Exception], ...] = (
    (_Refused, tarfile.FilterError) if _HAS_FILTERS else (_Refused,)
)


def _inside(dest: str, target: str) -> bool:
    root = os.path.realpath(dest)
    return os.path.commonpath([root, os.path.realpath(target)]) == root


def _legacy_data_filter(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
    """What ``tarfile.data_filter`` refuses and changes, for interpreters without it."""
    name = member.name
    if name.startswith(("/", os.sep)) or ".." in name.split("/"):
        raise _Refused(name)
    if not _inside(dest, os.path.join(dest, name)):
        raise _Refused(name)
    if member.isdev() or member.isfifo():
        raise _Refused(name)
    if member.issym():
        link = member.linkname
        if os.path.isabs(link) or not _inside(
            dest, os.path.join(dest, os.path.dirname(name), link)
        ):
            raise _Refused(name)
    if member.islnk() and (
        os.path.isabs(member.linkname) or not _inside(dest, os.path.join(dest, member.linkname))
    ):
        raise _Refused(name)
    checked = copy.copy(member)
    if member.isreg() or member.islnk():
        checked.mode = (member.mode & 0o755) | 0o600  # no setuid/setgid/sticky, owner rw
    elif member.isdir():
        checked.mode = (member.mode & 0o755) | 0o700
    return checked


def _replace(member: tarfile.TarInfo, **changes: Any) -> tarfile.TarInfo:
    if _HAS_FILTERS:
        return member.replace(**changes, deep=False)
    changed = copy.copy(member)
    for key, value in changes.items():
        setattr(changed, key, value)
    return changed


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
            member = _replace(member, **changes)
        if include is not None and member.name.split("/", 1)[0] not in include:
            return None
        try:
            if _HAS_FILTERS:
                checked = tarfile.data_filter(member, path)
            else:
                checked = _legacy_data_filter(member, path)
        except _FILTER_ERRORS:
            skipped.append(original)
            return None
        return _replace(checked, uid=uid, gid=gid, uname="", gname="")

    stream = io.BufferedReader(_ChunkReader(chunks), buffer_size=1 << 20)
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        if _HAS_FILTERS:
            tar.extractall(dest, filter=safe)
        else:
            for member in tar:
                kept = safe(member, str(dest))
                if kept is not None:
                    tar.extract(kept, dest, set_attrs=not kept.issym())
    return skipped
