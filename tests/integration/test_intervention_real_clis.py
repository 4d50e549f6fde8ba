"""The real Claude Code and Codex binaries start the reference intervention from the wiring
files treated arms use, and see its tools -- with no model.

* ``claude mcp list`` / ``claude mcp get`` health-check the server (a real handshake).
* ``claude -p`` and ``codex exec`` with an unreachable model endpoint (they fail fast:
  ``CLAUDE_CODE_MAX_RETRIES=0``, ``--disable unbounded_connection_retries``) start it as
  an episode does; the server's own trace (``TOKEN_OPTIMIZER_TRACE``) shows each client's
  handshake and that the arm, state dir and trace variables reached it (Codex passes
  only the ``env_vars`` the config lists). Claude's MCP log records the connection.
* The baseline's wiring (an empty ``--mcp-config``; Codex without the server) starts nothing.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from pairlab.adapters.backends.local import agent_path
from tests.intervention_wiring import (
    EMPTY_CLAUDE_MCP_CONFIG,
    claude_arm_args,
    codex_arm_args,
    write_claude_user_config,
    write_codex_config,
)
from tests.real_cli_bins import claude_binary, codex_binary

CLOSED_ENDPOINT = "http://127.0.0.1:9"  # discard port: nothing listens, connections are refused
QUIET_CLAUDE = {
    "TERM": "dumb",
    "IS_SANDBOX": "1",
    "ANTHROPIC_API_KEY": "sk-ant-dummy",
    "ANTHROPIC_BASE_URL": CLOSED_ENDPOINT,
    "CLAUDE_CODE_MAX_RETRIES": "0",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def _episode(tmp_path: Path, arm: str) -> tuple[dict[str, str], Path, Path]:
    home, workspace, state = tmp_path / "home", tmp_path / "workspace", tmp_path / "state"
    for path in (home / "tmp", home / ".claude", home / ".codex", workspace, state):
        path.mkdir(parents=True)
    trace = tmp_path / "trace.jsonl"
    env = {
        "PATH": agent_path("/usr/bin:/bin"),  # what a local episode gets: the venv's bin first
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CODEX_HOME": str(home / ".codex"),
        "TMPDIR": str(home / "tmp"),
        "CLAUDE_CODE_TMPDIR": str(home / "tmp"),
        "TOKEN_OPTIMIZER_EXPERIMENT_ARM": arm,
        "PAIRLAB_STATE_DIR": str(state),
        "PAIRLAB_WORKSPACE_ROOT": str(workspace),
        "PAIRLAB_WORKSPACE": str(workspace),
        "TOKEN_OPTIMIZER_TRACE": str(trace),
    }
    return env, workspace, trace


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def _conversation(trace: Path) -> list[tuple[str, Any]]:
    if not trace.exists():
        return []
    return [
        (entry["dir"], json.loads(entry["line"]))
        for entry in map(json.loads, trace.read_text().splitlines())
    ]


def _methods(conversation: list[tuple[str, Any]]) -> list[str]:
    return [m["method"] for d, m in conversation if d == "in" and "method" in m]


def _offered_tools(conversation: list[tuple[str, Any]]) -> list[str]:
    listing = [m for d, m in conversation if d == "out" and "tools" in m.get("result", {})]
    assert len(listing) == 1, conversation
    return [t["name"] for t in listing[0]["result"]["tools"]]


def test_claude_mcp_list_and_get_connect_to_the_user_scope_server(tmp_path: Path) -> None:
    env, workspace, trace = _episode(tmp_path, "optimizer")
    write_claude_user_config(Path(env["CLAUDE_CONFIG_DIR"]))
    claude = str(claude_binary())
    listed = _run([claude, "mcp", "list"], env, workspace)
    assert listed.returncode == 0, listed.stderr
    assert "token-optimizer: token-optimizer mcp - ✔ Connected" in listed.stdout
    got = _run([claude, "mcp", "get", "token-optimizer"], env, workspace)
    assert got.returncode == 0 and "Status: ✔ Connected" in got.stdout, got.stdout
    assert "Scope: User config" in got.stdout
    conversation = _conversation(trace)
    assert _methods(conversation)[:2] == ["server/discover", "initialize"]
    assert "tools/list" in _methods(conversation)


def test_claude_episode_starts_the_server_from_the_treated_arm_flags(tmp_path: Path) -> None:
    env, workspace, trace = _episode(tmp_path, "optimizer")
    env.update(QUIET_CLAUDE)
    argv = [
        str(claude_binary()),
        "-p",
        "read src/app.py",
        "--output-format",
        "json",
        "--setting-sources",
        "",
        *claude_arm_args(),
        "--dangerously-skip-permissions",
    ]
    result = _run(argv, env, workspace)
    assert json.loads(result.stdout)["is_error"] is True  # no model: the API call fails fast
    conversation = _conversation(trace)
    initialize = next(m for d, m in conversation if d == "in" and m.get("method") == "initialize")
    assert initialize["params"]["clientInfo"] == {
        **initialize["params"]["clientInfo"],
        "name": "claude-code",
        "version": "2.1.332",
    }
    assert _offered_tools(conversation) == ["read_file", "expand"]
    logs = list(
        Path(env["HOME"]).glob(".cache/claude-cli-nodejs/*/mcp-logs-token-optimizer/*.jsonl")
    )
    assert len(logs) == 1
    debug = [json.loads(line)["debug"] for line in logs[0].read_text().splitlines()]
    assert any(line.startswith("Successfully connected (transport: stdio)") for line in debug)
    assert any('"serverVersion":{"name":"token-optimizer"' in line for line in debug)


def test_claude_baseline_flags_start_no_server(tmp_path: Path) -> None:
    env, workspace, trace = _episode(tmp_path, "baseline")
    env.update(QUIET_CLAUDE)
    write_claude_user_config(Path(env["CLAUDE_CONFIG_DIR"]))  # planted: must stay unused
    argv = [
        str(claude_binary()),
        "-p",
        "hi",
        "--output-format",
        "json",
        "--setting-sources",
        "",
        "--strict-mcp-config",
        "--mcp-config",
        EMPTY_CLAUDE_MCP_CONFIG,
        "--dangerously-skip-permissions",
    ]
    result = _run(argv, env, workspace)
    assert json.loads(result.stdout)["is_error"] is True
    assert not trace.exists()


def _codex_argv(extra: list[str]) -> list[str]:
    return [
        str(codex_binary()),
        "exec",
        "--skip-git-repo-check",
        "--json",
        "--dangerously-bypass-approvals-and-sandbox",
        "--disable",
        "plugins",
        "--disable",
        "unbounded_connection_retries",
        "-m",
        "gpt-5.5",
        "-c",
        'model_provider="local"',
        "-c",
        'model_providers.local={name="local",base_url="'
        + CLOSED_ENDPOINT
        + '/v1",wire_api="responses",request_max_retries=0,stream_max_retries=0}',
        *extra,
        "read src/app.py",
    ]


def _assert_codex_started_the_server(trace: Path) -> None:
    conversation = _conversation(trace)
    initialize = next(m for d, m in conversation if d == "in" and m.get("method") == "initialize")
    assert initialize["params"]["protocolVersion"] == "2025-06-18"
    assert initialize["params"]["clientInfo"]["name"] == "codex-mcp-client"
    assert initialize["params"]["clientInfo"]["version"] == "0.163.0"
    # tools offered = the arm variable reached the server through env_vars (and so did the trace's)
    assert _offered_tools(conversation) == ["read_file", "expand"]


def test_codex_starts_the_server_from_the_treated_arm_flags(tmp_path: Path) -> None:
    env, workspace, trace = _episode(tmp_path, "optimizer")
    argv = _codex_argv(["--ignore-user-config", "--ignore-rules", *codex_arm_args()])
    result = _run(argv, env, workspace)
    assert result.returncode == 1 and '"type":"turn.failed"' in result.stdout, result.stdout
    _assert_codex_started_the_server(trace)


def test_codex_starts_the_server_from_the_seeded_config_toml(tmp_path: Path) -> None:
    env, workspace, trace = _episode(tmp_path, "optimizer")
    write_codex_config(Path(env["CODEX_HOME"]))
    result = _run(_codex_argv([]), env, workspace)
    assert result.returncode == 1, result.stdout
    _assert_codex_started_the_server(trace)


def test_codex_ignore_user_config_starts_no_seeded_server(tmp_path: Path) -> None:
    env, workspace, trace = _episode(tmp_path, "baseline")
    write_codex_config(Path(env["CODEX_HOME"]))  # planted: the baseline flag must ignore it
    result = _run(_codex_argv(["--ignore-user-config"]), env, workspace)
    assert result.returncode == 1, result.stdout
    assert not trace.exists()
