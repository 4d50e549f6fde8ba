"""Bad servers with the real CLIs (issue 26 item 6): ``pairlab episode run`` with a
manifest whose server fails at once, never answers its handshake, exits right after
listing its tools, or lists no tool. The episode still runs (the CLI goes on without
the server; Codex refuses a ``required`` server and asks no model) and says which fault
it was -- judged from the CLI's own account and the provider emulator's ledger
(``core/intervention_health``) -- with the reference intervention ``loaded`` beside them.

One short episode each against the emulator, local backend (about 4-7 s each).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pairlab.cli import app
from tests.support import REPO_ROOT

pytestmark = pytest.mark.realcli

SERVER = REPO_ROOT / "tests" / "fixtures" / "bad_servers" / "mcp_server.py"
# command, args, startup timeout: each a way for a server not to be there
BAD = {
    "start-fails": ("sh", ["-c", "echo boom >&2; exit 1"], 10),
    "never-answers": ("sleep", ["60"], 2),
    "exits-after-list": (sys.executable, [str(SERVER), "exit-after-list"], 10),
    "lists-no-tool": (sys.executable, [str(SERVER), "no-tools"], 10),
}


def _manifest(tmp_path: Path, ident: str) -> Path:
    command, args, timeout_s = BAD[ident]
    path = tmp_path / f"{ident}.yaml"
    path.write_text(
        json.dumps(  # JSON is YAML
            {
                "schema_version": 1,
                "id": ident,
                "version": "0",
                "description": f"A server that misbehaves on purpose: {ident}.",
                "kind": "stdio",
                "install": {"module": "pairlab.intervention"},
                "command": command,
                "args": args,
                "arms": {"optimizer": {}, "retrieval": "unsupported", "full": "unsupported"},
                "startup_timeout_s": timeout_s,
            }
        )
    )
    return path


def _episode(out: Path, intervention: str, cli: str = "claude") -> dict[str, Any]:
    args = ["episode", "run", "--profile", cli, "--task", "fix-median", "--arm", "optimizer"]
    result = CliRunner().invoke(
        app, [*args, "--intervention", intervention, "--out", str(out), "--json"]
    )
    assert result.exit_code == 0, result.stderr  # the episode ran: a bad server is an outcome
    outcome: dict[str, Any] = json.loads(result.stdout)
    return outcome


def _mcp_tools(out: Path) -> list[set[str]]:
    rows = [json.loads(line) for line in (out / "emulator-ledger.jsonl").read_text().splitlines()]
    return [
        {t for t in r["tools_offered"] if t.startswith("mcp__")}
        for r in rows
        if r["kind"] == "request"
    ]


@pytest.mark.parametrize(
    ("ident", "status", "said"),
    [
        ("start-fails", "intervention-start-failed", "(CONNECTION_CLOSED)"),
        ("never-answers", "intervention-timeout", "timed out after 2000ms"),
        ("exits-after-list", "intervention-exited", "after connecting"),
        ("lists-no-tool", "intervention-not-loaded", "none of the"),
    ],
)
def test_claude_runs_on_and_says_why_the_server_was_not_there(
    tmp_path: Path, ident: str, status: str, said: str
) -> None:
    out = tmp_path / "out"
    outcome = _episode(out, str(_manifest(tmp_path, ident)))
    assert (outcome["intervention_status"], outcome["exit_code"]) == (status, 0)
    assert said in outcome["intervention_detail"]
    # the CLI went on and the scripted episode was graded as it ended
    assert outcome["passed"] is True, outcome["grader_checks"]
    offered = _mcp_tools(out)
    assert offered
    if ident == "exits-after-list":  # Claude keeps offering the dead server's tools
        assert all(tools == {f"mcp__{ident}__probe"} for tools in offered)
    else:
        assert not any(offered)


def test_the_reference_server_is_loaded(tmp_path: Path) -> None:
    outcome = _episode(tmp_path / "out", "reference")
    assert outcome["intervention_status"] == "loaded"
    assert outcome["intervention_detail"].endswith("model requests offered 'token-optimizer'")
    tools = outcome["intervention_tools"]  # its previews fit: no error, nothing cut
    assert tools["calls"] >= 1 and (tools["errors"], tools["oversized"]) == (0, 0)


def test_codex_refuses_a_required_server_that_times_out(tmp_path: Path) -> None:
    """Codex waits for a ``required`` server, then ends the episode (exit 1) before any
    model request, saying why on stderr: the episode is recorded, not lost."""
    out = tmp_path / "out"
    args = ["episode", "run", "--profile", "codex", "--task", "fix-median", "--arm", "optimizer"]
    manifest = str(_manifest(tmp_path, "never-answers"))
    result = CliRunner().invoke(
        app, [*args, "--intervention", manifest, "--out", str(out), "--json"]
    )
    assert result.exit_code == 1, result.stderr  # a grader check failed: nothing was fixed
    outcome = json.loads(result.stdout)
    assert outcome["exit_code"] == 1 and outcome["passed"] is False
    assert outcome["intervention_status"] == "intervention-timeout"
    assert outcome["intervention_detail"].startswith("codex: never-answers: timed out handshaking")
    assert _mcp_tools(out) == []  # no model request


def _posing_manifest(tmp_path: Path, mode: str) -> Path:
    """A manifest whose server poses as the reference server's ``read_file`` (the
    scripted model reads through it when offered) and misbehaves in its calls."""
    path = tmp_path / f"{mode}.yaml"
    path.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "id": mode,
                "version": "0",
                "description": f"A read_file that misbehaves in its calls: {mode}.",
                "kind": "stdio",
                "server_name": "token-optimizer",
                "install": {"module": "pairlab.intervention"},
                "command": sys.executable,
                "args": [str(SERVER), mode],
                "arms": {"optimizer": {}, "retrieval": "unsupported", "full": "unsupported"},
                "startup_timeout_s": 10,
            }
        )
    )
    return path


def _cut_on_last_request(out: Path) -> list[str]:
    rows = [json.loads(line) for line in (out / "emulator-ledger.jsonl").read_text().splitlines()]
    model = [r for r in rows if r["kind"] == "request" and r["request_index"] >= 0]
    cut: list[str] = max(model, key=lambda r: r["request_index"])["tool_results_cut"]
    return cut


@pytest.mark.parametrize(
    ("cli", "cut_as"),
    [("claude", "mcp__token-optimizer__read_file"), ("codex", "mcp__token_optimizer/read_file")],
)
def test_a_tool_that_errors_then_overflows_is_recorded_and_graded(
    tmp_path: Path, cli: str, cut_as: str
) -> None:
    """fix-median's scripted episode reads README.md, then stats.py, through read_file:
    the first call answers ``isError: true`` (Claude Code sends the model ``is_error``;
    Codex sends plain text and marks its own event ``failed``), the second 400,000
    characters (Claude Code refuses it above 25,000 tokens and saves it to a file; Codex
    keeps ~48,000 characters). The episode is loaded, not excluded, and graded as it
    ended: the script edits stats.py anyway and passes."""
    out = tmp_path / "out"
    outcome = _episode(out, str(_posing_manifest(tmp_path, "error-then-huge")), cli)
    assert outcome["intervention_status"] == "loaded", outcome["intervention_detail"]
    assert outcome["intervention_tools"] == {"calls": 2, "errors": 1, "oversized": 1}
    assert outcome["passed"] is True, outcome["grader_checks"]
    assert _cut_on_last_request(out) == [cut_as]  # the ledger: what the CLI sent back cut
