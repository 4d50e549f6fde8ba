"""A third-party MCP server from PyPI on the Docker backend, with the real Claude Code:
``pairlab episode run --backend docker --intervention <mcp-server-git>`` builds, on first
use, an image derived from the client image with the server's hashed lock installed into
``/opt/interventions/<id>`` (``pairlab.adapters.images.intervention_images``); the treated
request offers exactly the server's tools (the provider emulator's request ledger); the
baseline runs in the same image, offered none of them, and that second use reuses the image
(no build); ``pairlab images list`` shows it current and ``pairlab images prune`` keeps it.

The manifest is the shipped ``mcp-server-git`` under a fresh id (a copy beside its lock), so
its image is new on every run -- the first use really builds -- and no concurrent run uses
it; the test removes that image at the end. The client image is the default one.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pairlab.adapters.images import intervention_images
from pairlab.adapters.images.docker_cli import run_docker
from pairlab.adapters.images.engine import inspect
from pairlab.adapters.images.intervention_images import derived_for
from pairlab.adapters.interventions import load_intervention
from pairlab.core.errors import EnvironmentUnavailable
from tests.support import REPO_ROOT

pytestmark = [
    pytest.mark.docker,
    pytest.mark.realcli,
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.timeout(900),
]

PAIRLAB = Path(sys.executable).parent / "pairlab"
SHIPPED = "mcp-server-git"
CLIENT = "pairlab/claude:2.1.332"
TOOLDEFS = REPO_ROOT / "docs" / "research" / "third-party-mcp" / "tooldefs"


@pytest.fixture
def manifest(tmp_path: Path) -> Iterator[Path]:
    """The shipped manifest under a fresh id, its lock beside it; its image removed after."""
    fresh = f"{SHIPPED}-t{secrets.token_hex(3)}"
    (tmp_path / "locks").mkdir()
    lock = REPO_ROOT / "interventions" / "locks" / f"{SHIPPED}.txt"
    (tmp_path / "locks" / lock.name).write_bytes(lock.read_bytes())
    text = (REPO_ROOT / "interventions" / f"{SHIPPED}.yaml").read_text()
    path = tmp_path / f"{fresh}.yaml"
    path.write_text(text.replace(f"id: {SHIPPED}\n", f"id: {fresh}\n", 1))
    tag = derived_for(CLIENT, load_intervention(str(path))).tag
    assert inspect(tag) is None  # a fresh id: nothing built yet
    yield path
    run_docker(["image", "rm", "--force", tag])


def _pairlab(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PAIRLAB), *args],
        capture_output=True,
        text=True,
        timeout=800,
        check=False,
        env=dict(os.environ),
    )


def _episode(manifest: Path, arm: str, out: Path) -> subprocess.CompletedProcess[str]:
    args = ["episode", "run", "--profile", "claude", "--task", "fix-median", "--arm", arm]
    args += ["--backend", "docker", "--intervention", str(manifest), "--out", str(out), "--json"]
    return _pairlab(args)


def _mcp_tools_offered(out: Path) -> list[set[str]]:
    rows = [json.loads(line) for line in (out / "emulator-ledger.jsonl").read_text().splitlines()]
    requests = [r for r in rows if r["kind"] == "request"]
    assert requests
    return [{t for t in r["tools_offered"] if t.startswith("mcp__")} for r in requests]


def test_docker_builds_the_derived_image_once_and_both_arms_run_it(
    manifest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wired = load_intervention(str(manifest))
    tag = derived_for(CLIENT, wired).tag
    expected = {
        f"mcp__{wired.manifest.mcp_name}__{t['name']}"
        for t in json.loads((TOOLDEFS / f"{SHIPPED}.tools.json").read_text())
    }

    treated = _episode(manifest, "optimizer", tmp_path / "treated")
    assert treated.returncode == 0, treated.stderr[-4000:]
    assert f"building {tag}" in treated.stderr and f"{tag}: built in" in treated.stderr
    outcome: dict[str, Any] = json.loads(treated.stdout)
    assert outcome["passed"] is True, outcome["grader_checks"]
    assert outcome["backend"] == "docker"
    assert outcome["intervention"] == wired.identity.to_json()
    # every request offered exactly the server's tools, started from the image's environment
    assert all(tools == expected for tools in _mcp_tools_offered(tmp_path / "treated"))
    built = inspect(tag)
    assert built is not None
    marks = built["Config"]["Labels"]
    assert (
        marks["pairlab.intervention"] == wired.manifest.id and marks["pairlab.client"] == "claude"
    )

    # the baseline: the same image, reused (no build), and no MCP tool offered
    baseline = _episode(manifest, "baseline", tmp_path / "baseline")
    assert baseline.returncode == 0, baseline.stderr[-4000:]
    assert "building" not in baseline.stderr and f"{tag}: up to date" in baseline.stderr
    assert json.loads(baseline.stdout)["passed"] is True
    offered = _mcp_tools_offered(tmp_path / "baseline")
    assert offered and not any(offered)
    again = inspect(tag)
    assert again is not None and again["Id"] == built["Id"]

    # where the build inputs are absent (a worker container has no
    # containers/intervention-image), the present image is used unchecked; an absent one
    # is exit 3 with how to build it, and nothing is built
    monkeypatch.setattr(intervention_images, "DOCKERFILE", tmp_path / "absent" / "Dockerfile")
    logs: list[str] = []
    present = intervention_images.ensure_intervention_image(CLIENT, wired, log=logs.append)
    assert (present.tag, present.image_id, present.input_hash) == (tag, built["Id"], None)
    assert any("unchecked" in line for line in logs)
    other = manifest.with_name("mcp-server-git-absent.yaml")
    other.write_text(manifest.read_text().replace(f"id: {wired.manifest.id}\n", "id: git-absent\n"))
    with pytest.raises(EnvironmentUnavailable) as absent:
        intervention_images.ensure_intervention_image(
            CLIENT, load_intervention(str(other)), log=logs.append
        )
    assert absent.value.exit_code == 3 and "pairlab episode run --backend docker" in str(
        absent.value
    )
    monkeypatch.undo()

    # listed as current; prune keeps it
    listed = _pairlab(["images", "list", "--json"])
    assert listed.returncode == 0, listed.stderr[-2000:]
    rows = {r["tag"]: r for r in json.loads(listed.stdout)["images"]}
    assert rows[tag]["build"] == "intervention" and rows[tag]["current"] is True
    assert rows[tag]["name"] == f"claude+{wired.manifest.id}"
    pruned = _pairlab(["images", "prune", "--dry-run"])
    assert pruned.returncode == 0, pruned.stderr[-2000:]
    assert tag not in pruned.stderr
