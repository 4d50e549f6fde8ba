"""A third-party MCP server from PyPI, end to end with the real Claude Code: ``pairlab
episode run --intervention mcp-server-git`` installs the pinned server from its hashed
lock into its own environment (a fresh cache here; never pairlab's venv), the CLI starts
it from the treated episode's PATH (a directory holding only the command's link), and its tools reach the model -- read from the
provider emulator's request ledger (``tools_offered`` of every request). The episode is
recorded with the intervention's id, version and manifest hash; the baseline lists none
of its tools; an install that fails stops the command before any episode runs.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pairlab.adapters.intervention_install import CACHE_ENV, environment_dir
from pairlab.adapters.interventions import load_intervention
from pairlab.cli import app
from tests.support import REPO_ROOT, cli_exit

pytestmark = pytest.mark.realcli

ID = "mcp-server-git"
RESEARCH = REPO_ROOT / "docs" / "research" / "third-party-mcp" / "tooldefs"
# each shipped third-party manifest and its server's tools/list as measured by the research
TOOLDEFS = {
    "mcp-server-git": RESEARCH / "mcp-server-git.tools.json",
    "code-review-graph": RESEARCH / "code-review-graph-focused.tools.json",  # --tools: 4 of 30
}
TASKS = {"mcp-server-git": "fix-median", "code-review-graph": "navigate-legacy-parse"}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh intervention cache: the first episode really installs the server."""
    root = tmp_path_factory.mktemp("intervention-cache")
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(root)
    try:
        yield root
    finally:
        if before is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = before


def _episode(
    out: Path, arm: str, intervention: str = ID, task: str = "fix-median", cli: str = "claude"
) -> tuple[int, str, str]:
    args = ["episode", "run", "--profile", cli, "--task", task, "--arm", arm]
    result = CliRunner().invoke(
        app, [*args, "--intervention", intervention, "--out", str(out), "--json"]
    )
    return result.exit_code, result.stdout, result.stderr


def _requests(out: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (out / "emulator-ledger.jsonl").read_text().splitlines()]
    return [r for r in rows if r["kind"] == "request"]


@pytest.mark.parametrize("ident", sorted(TOOLDEFS))
def test_claude_lists_the_installed_servers_tools(cache: Path, tmp_path: Path, ident: str) -> None:
    code, stdout, stderr = _episode(tmp_path / "treated", "optimizer", ident, TASKS[ident])
    assert code == 0, stderr
    outcome = json.loads(stdout)
    assert outcome["passed"] is True, outcome["grader_checks"]
    wired = load_intervention(ident)
    assert outcome["intervention"] == wired.identity.to_json()
    # installed into its own environment in the fresh cache, not into pairlab's
    env = environment_dir(wired)
    assert env.parent == cache and (env / ".pairlab-installed.json").is_file()
    assert (env / "bin" / wired.manifest.command).is_file()
    # the treated PATH's head holds only the command (the agent's python3 is not the server's)
    assert [p.name for p in (env / "path").iterdir()] == [wired.manifest.command]
    assert importlib.util.find_spec(ident.replace("-", "_")) is None
    # every request the CLI sent offered exactly the server's tools (its real tools/list,
    # as measured in the research) and no other MCP server's
    prefix = f"mcp__{wired.manifest.mcp_name}__"
    expected = {prefix + t["name"] for t in json.loads(TOOLDEFS[ident].read_text())}
    requests = _requests(tmp_path / "treated")
    assert requests
    for row in requests:
        mcp = {t for t in row["tools_offered"] if t.startswith("mcp__")}
        assert mcp == expected, row["request_index"]


def test_claude_baseline_lists_none_of_them(cache: Path, tmp_path: Path) -> None:
    code, _, stderr = _episode(tmp_path / "baseline", "baseline")
    assert code == 0, stderr
    requests = _requests(tmp_path / "baseline")
    assert requests
    assert not any(t.startswith("mcp__") for r in requests for t in r["tools_offered"])


@pytest.mark.parametrize("arm", ["optimizer", "baseline"])
def test_codex_names_the_installed_server_in_every_request(
    cache: Path, tmp_path: Path, arm: str
) -> None:
    """Codex defers MCP tools behind tool_search, whose description names each server
    that has answered its handshake; ``required = true`` in the wiring makes Codex wait
    for it (without it, this slow Python server was never listed)."""
    code, stdout, stderr = _episode(tmp_path / arm, arm, cli="codex")
    assert code == 0, stderr
    outcome = json.loads(stdout)
    assert outcome["passed"] is True, outcome["grader_checks"]
    assert outcome["intervention"] == load_intervention(ID).identity.to_json()
    requests = _requests(tmp_path / arm)
    assert requests
    listed = [f"\n- {ID}" in (r["tool_search_sources"] or "") for r in requests]
    assert listed == [arm != "baseline"] * len(requests)


def test_failed_install_stops_before_any_episode(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The lock's hash of the server's wheel is not the real one: uv refuses to install."""
    real = "d4bfe88847089ed93d8e2dfc7ec97a23e5d067cfd165ee811e42675b614ab409"
    fake = "f" * 64  # (all zeros would read as the integer 0 in YAML)
    (tmp_path / "locks").mkdir()
    lock = (REPO_ROOT / "interventions" / "locks" / f"{ID}.txt").read_text()
    other = "386b8a6de78623d046c37779a20cdf7741669567fcaab28e717327eb7c190e27"
    (tmp_path / "locks" / f"{ID}.txt").write_text(lock.replace(real, fake).replace(other, fake))
    manifest = (REPO_ROOT / "interventions" / f"{ID}.yaml").read_text().replace(real, fake)
    (tmp_path / f"{ID}.yaml").write_text(manifest)
    out = tmp_path / "out"
    args = ["episode", "run", "--profile", "claude", "--task", "fix-median", "--arm", "optimizer"]
    assert (
        cli_exit(
            [*args, "--intervention", str(tmp_path / f"{ID}.yaml"), "--out", str(out), "--json"]
        )
        == 1
    )
    error = json.loads(capsys.readouterr().out)
    assert error["reason_code"] == "intervention-install-failed"
    assert "Hash mismatch" in error["error"]  # uv's own reason, passed on
    assert not out.exists() or not any(out.iterdir())  # no emulator, no episode
