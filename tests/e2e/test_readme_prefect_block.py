"""The README's Prefect UI block, followed as written in a fresh directory (issue 29, item 8).

The block is taken from README.md ("### The Prefect UI") and run by bash in an empty
directory (a fresh clone has no ``.pairlab/`` yet; the server's SQLite database lives in
``PREFECT_HOME`` under it), with two substitutions only: ``uv run X`` is this checkout's
installed ``X`` and port 4200 a free port. The server must come up healthy and
`pairlab serve` must register the deployments the README names.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.prefect_server import free_port, stop_process_group
from tests.support import REPO_ROOT

READY_S = 600

pytestmark = [pytest.mark.prefect, pytest.mark.e2e, pytest.mark.timeout(900)]


def _block() -> str:
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("### The Prefect UI", 1)[1]
    found = re.search(r"```bash\n(.*?)```", section, re.S)
    assert found is not None, "no bash block under 'The Prefect UI'"
    return found.group(1)


def _deployments(api_url: str) -> list[str]:
    req = urllib.request.Request(
        f"{api_url}/deployments/filter",
        data=b"{}",
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return [d["name"] for d in json.loads(resp.read())]
    except OSError:
        return []


def test_the_readme_prefect_ui_block_works_in_a_fresh_directory(tmp_path: Path) -> None:
    block = _block()
    names = re.search(r"# deployments: (.+)", block)
    assert names is not None, block
    expected = {n.strip() for n in names[1].split(",")}
    port = free_port()
    bin_dir = Path(os.environ.get("VIRTUAL_ENV", REPO_ROOT / ".venv")) / "bin"
    script = block.replace("uv run ", f"{bin_dir}/").replace("4200", str(port))
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["PREFECT_SERVER_API_PORT"] = str(port)  # the UI's API URL (docs: a second server)
    with (tmp_path / "block.log").open("wb") as log_file:
        proc = subprocess.Popen(
            ["bash", "-c", script],
            cwd=fresh,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + READY_S
        while not expected <= set(_deployments(f"http://127.0.0.1:{port}/api")):
            log = (tmp_path / "block.log").read_text(errors="replace")
            assert "unable to open database file" not in log, log[-3000:]
            assert proc.poll() is None, log[-3000:]
            assert time.monotonic() < deadline, log[-3000:]
            time.sleep(2)
    finally:
        stop_process_group(proc, timeout=30)
    assert (fresh / ".pairlab" / "prefect").is_dir()
