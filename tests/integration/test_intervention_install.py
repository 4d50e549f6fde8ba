"""Installing a pypi intervention for real (uv, from the shipped hashed lock, into a fresh
cache): two concurrent installers install once (the second waits on the file lock, then
reuses the environment); a leftover directory without the marker (a crashed install) is
removed and installed again; the environment is not pairlab's and runs the server; the
directory the treated arms get first on PATH holds only the server's command."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pairlab.adapters.intervention_install import CACHE_ENV, MARKER, ensure_installed
from pairlab.adapters.interventions import load_intervention

ID = "mcp-server-git"


def test_concurrent_installers_install_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("PAIRLAB_LOCK_DIR", str(tmp_path / "locks"))
    loaded = load_intervention(ID)
    logs: list[str] = []
    results: list[Path] = []
    start = threading.Barrier(2)

    def install() -> None:
        start.wait()
        results.append(ensure_installed(loaded, log=logs.append))

    threads = [threading.Thread(target=install) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert len(results) == 2 and results[0] == results[1]
    assert sum(m.startswith(f"installing {loaded.manifest.install.pypi}") for m in logs) == 1, logs
    assert sum("waiting" in m for m in logs) == 1, logs
    path_dir = results[0]
    target = path_dir.parent
    bin_dir = target / "bin"
    assert (target / MARKER).is_file()
    assert Path(sys.executable).parent != bin_dir  # not pairlab's environment
    # the treated arms' PATH head: the command alone, a link into bin; not bin's python3
    assert [p.name for p in path_dir.iterdir()] == [loaded.manifest.command]
    assert (path_dir / ID).resolve() == (bin_dir / ID).resolve()
    assert (bin_dir / "python3").exists() and shutil.which("python3", path=str(path_dir)) is None
    # the environment's own interpreter imports the server; pairlab's does not
    own = subprocess.run(
        [str(bin_dir / "python"), "-c", "import mcp_server_git"], capture_output=True, timeout=120
    )
    assert own.returncode == 0, own.stderr
    mine = subprocess.run(
        [sys.executable, "-c", "import mcp_server_git"], capture_output=True, timeout=120
    )
    assert mine.returncode != 0


def test_a_crashed_install_is_redone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("PAIRLAB_LOCK_DIR", str(tmp_path / "locks"))
    loaded = load_intervention(ID)
    logs: list[str] = []
    path_dir = ensure_installed(loaded, log=logs.append)
    target = path_dir.parent
    (target / MARKER).unlink()  # as if the installer died before its last step
    (target / "half-written").write_text("x")
    assert ensure_installed(loaded, log=logs.append) == path_dir
    assert not (target / "half-written").exists() and (target / MARKER).is_file()
    assert [p.name for p in path_dir.iterdir()] == [ID]
    assert sum(m.startswith("installing") for m in logs) == 2
    # a finished environment is reused as it is: no uv, no log line
    assert ensure_installed(loaded, log=logs.append) == path_dir
    assert sum(m.startswith("installing") for m in logs) == 2
