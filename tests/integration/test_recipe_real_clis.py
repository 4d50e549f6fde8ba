"""A third-party server's usage recipe, end to end with the real CLIs (issue 26 item 4):
``pairlab episode run --intervention mcp-server-git`` on fix-median, the scripted model
loading the deferred git tools through the CLI's own tool search and calling
``git_status`` and ``git_diff_unstaged`` in place of the compile check; the real server
answers from the workspace (a git repository of the fixture, ``workspace:
git-repository``) and the grader passes. The baseline of the same seed never follows the
recipe. Evidence: the emulator's ledger (each request's turn) and the CLI's own
transcript (what came back from the server).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pairlab.cli import app

pytestmark = pytest.mark.realcli

ID = "mcp-server-git"
SEED = 0  # fix-median, seed 0: the compile check is drawn (test_scripted_model_recipe)
CALLS = {
    "claude": ["ToolSearch", f"mcp__{ID}__git_status", f"mcp__{ID}__git_diff_unstaged"],
    "codex": [
        "tool_search",
        "mcp__mcp_server_git/git_status",
        "mcp__mcp_server_git/git_diff_unstaged",
    ],
}
TRANSCRIPTS = {"claude": ".claude/projects/*/*.jsonl", "codex": ".codex/sessions/**/*.jsonl"}


def _episode(out: Path, cli: str, arm: str) -> dict[str, Any]:
    args = ["episode", "run", "--profile", cli, "--task", "fix-median", "--arm", arm]
    result = CliRunner().invoke(
        app, [*args, "--intervention", ID, "--seed", str(SEED), "--out", str(out), "--json"]
    )
    assert result.exit_code == 0, result.stderr
    outcome: dict[str, Any] = json.loads(result.stdout)
    assert outcome["passed"] is True, outcome["grader_checks"]  # the edits still happen
    return outcome


def _actions(out: Path) -> list[str]:
    """The model's actions in request order. Rows are written as answers end, and Codex may
    send its next request before the stream of the last one has closed (seen under load:
    the apply_patch answer's row after the next request's), so file order is not it."""
    rows = [json.loads(line) for line in (out / "emulator-ledger.jsonl").read_text().splitlines()]
    turns = sorted(
        (r for r in rows if r["kind"] == "request" and r.get("turn")),
        key=lambda r: r["request_index"],
    )
    return [r["turn"]["action"] for r in turns]


def _transcript(out: Path, cli: str) -> str:
    found = sorted((out / "collected" / "home").glob(TRANSCRIPTS[cli]))
    assert found, f"no {cli} transcript collected"
    return "\n".join(p.read_text() for p in found)


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_the_recipe_calls_the_real_server_and_its_payload_comes_back(
    tmp_path: Path, cli: str
) -> None:
    out = tmp_path / "optimizer"
    outcome = _episode(out, cli, "optimizer")
    assert outcome["intervention_status"] == "loaded"
    assert outcome["intervention_tools"] == {"calls": 2, "errors": 0, "oversized": 0}
    actions = _actions(out)
    at = actions.index(CALLS[cli][0])
    assert actions[at : at + 3] == CALLS[cli]  # search, then the two recipe calls
    assert actions[-1] == "final-answer"
    text = _transcript(out, cli)
    # the real server's payloads, as the CLI handed them back: the repository's status
    # and the unstaged diff of the scripted edit
    assert "Repository status:" in text and "modified:   stats.py" in text
    assert "Unstaged changes:" in text and "diff --git a/stats.py b/stats.py" in text
    assert "raise ValueError" in text.split("Unstaged changes:", 1)[1]
    assert "Error executing tool" not in text


@pytest.mark.parametrize("cli", ["claude"])
def test_the_baseline_of_the_same_seed_never_follows_it(tmp_path: Path, cli: str) -> None:
    out = tmp_path / "baseline"
    _episode(out, cli, "baseline")
    actions = _actions(out)
    assert not any(a.startswith("mcp__") or a in ("ToolSearch", "tool_search") for a in actions)
    assert "ast.parse" in _transcript(out, cli)  # its built-in compile check instead
