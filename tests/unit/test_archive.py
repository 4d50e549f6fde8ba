"""Tar in/out of containers (pairlab/adapters/backends/archive.py) on real tar streams."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from pairlab.adapters.backends import archive
from pairlab.adapters.backends.archive import pack_dir, unpack_stream


@pytest.fixture(autouse=True, params=["filters", "legacy"])
def extraction(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test with Python's extraction filters and with the checks pairlab runs itself
    where they are missing (Debian 12's python3 3.11.2, the worker image's)."""
    if request.param == "legacy":
        monkeypatch.setattr(archive, "_HAS_FILTERS", False)
        monkeypatch.setattr(archive, "_FILTER_ERRORS", (archive._Refused,))


def _tar(entries: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    return info, data


def _dir(name: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    return info, None


def _link(name: str, target: str, kind: bytes) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


def _chunks(data: bytes, size: int = 7) -> list[bytes]:
    """Odd-sized chunks, as a streamed get_archive delivers them."""
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_strip_components_drops_the_parent_and_keeps_links(tmp_path: Path) -> None:
    data = _tar(
        [
            _dir("agent"),
            _dir("agent/home"),
            _file("agent/home/a.jsonl", b'{"x": 1}\n'),
            _link("agent/home/hard", "agent/home/a.jsonl", tarfile.LNKTYPE),
            _link("agent/home/soft", "a.jsonl", tarfile.SYMTYPE),
            _dir("agent/state"),
            _file("agent/state/s.txt", b"state"),
        ]
    )
    skipped = unpack_stream(_chunks(data), tmp_path, strip_components=1)
    assert skipped == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "state"]
    assert (tmp_path / "home" / "a.jsonl").read_bytes() == b'{"x": 1}\n'
    assert (tmp_path / "home" / "hard").read_bytes() == b'{"x": 1}\n'
    assert os.readlink(tmp_path / "home" / "soft") == "a.jsonl"
    assert (tmp_path / "state" / "s.txt").read_text() == "state"
    assert not (tmp_path / "agent").exists()


def test_include_keeps_only_the_named_top_level_entries(tmp_path: Path) -> None:
    data = _tar(
        [
            _file("agent/home/a", b"a"),
            _file("agent/state/s", b"s"),
            _file("agent/stray.txt", b"written next to the mounts"),
            _file("agent/homework/x", b"prefix, not the same name"),
        ]
    )
    skipped = unpack_stream(_chunks(data), tmp_path, strip_components=1, include=("home", "state"))
    assert skipped == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "state"]
    assert (tmp_path / "home" / "a").read_bytes() == b"a"


def test_strip_components_still_refuses_escapes(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    data = _tar(
        [
            _file("agent/home/ok", b"ok"),
            _file("agent/../../outside", b"no"),
            _link("agent/home/out", "/etc/passwd", tarfile.SYMTYPE),
            _link("agent/home/hard-out", "elsewhere", tarfile.LNKTYPE),
        ]
    )
    skipped = unpack_stream(_chunks(data), dest, strip_components=1)
    assert sorted(skipped) == ["agent/../../outside", "agent/home/hard-out", "agent/home/out"]
    assert (dest / "home" / "ok").read_bytes() == b"ok"
    assert not (tmp_path / "outside").exists()
    assert not (dest / "home" / "out").exists()


def test_pack_then_unpack_round_trips_a_tree(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "agent" / "home" / "deep").mkdir(parents=True)
    (src / "agent" / "home" / "deep" / "f").write_bytes(b"\x00\x01binary")
    (src / "workspace").mkdir()
    (src / "workspace" / "main.py").write_text("print(1)\n")
    data = pack_dir(src, uid=os.getuid(), gid=os.getgid())
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        names = tar.getnames()
    assert "agent/home/deep/f" in names and "workspace/main.py" in names

    whole = tmp_path / "whole"
    assert unpack_stream(_chunks(data, 512), whole) == []
    assert (whole / "workspace" / "main.py").read_text() == "print(1)\n"

    stripped = tmp_path / "stripped"
    assert unpack_stream(_chunks(data, 512), stripped, strip_components=2) == []
    assert (stripped / "deep" / "f").read_bytes() == b"\x00\x01binary"
    assert not (stripped / "main.py").exists()  # "workspace/main.py" had only 2 components
