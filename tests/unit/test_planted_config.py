"""The config ``pairlab certify`` plants for a real CLI, and how it reads the evidence back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pairlab.adapters.certify.live_probe import PROBE_SEED, PROBE_TASK
from pairlab.adapters.certify.planted_config import MARKER_DIR, SCRIPT_DIR, SCRIPT_NAME, plant
from pairlab.adapters.clients.registry import REAL_CLIS
from pairlab.core.emulator.scripted_model import ScriptChoices


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_every_item_is_planted_with_its_side_effect(client: str, tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    items = plant(client, home, workspace)
    assert len({i.slug for i in items}) == len(items)
    assert {i.scope for i in items} == {"user", "project"}
    for item in items:
        path = (home if item.scope == "user" else workspace) / item.path
        text = path.read_text()
        if "text" in item.evidence:
            assert item.text in text, item
        if "mcp" in item.evidence:
            assert item.server in text and SCRIPT_NAME in text, item
        if item.evidence == ("marker",):  # hooks
            command = json.loads(text)["hooks"]["SessionStart"][0]["hooks"][0]["command"]
            assert command.endswith(f'{MARKER_DIR}"/{item.slug}'), item
    for root in (home, workspace):
        assert (root / SCRIPT_DIR / SCRIPT_NAME).is_file()


def test_the_planted_mcp_server_marks_its_start_and_offers_one_tool(tmp_path: Path) -> None:
    items = plant("claude", tmp_path / "home", tmp_path / "ws")
    script = tmp_path / "ws" / SCRIPT_DIR / SCRIPT_NAME
    state = tmp_path / "state"
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25"},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "resources/list"},
    ]
    done = subprocess.run(
        [sys.executable, str(script), "project-mcp-json"],
        input="\n".join(json.dumps(m) for m in messages) + "\n",
        capture_output=True,
        text=True,
        env={**os.environ, "PAIRLAB_STATE_DIR": str(state)},
        timeout=30,
        check=True,
    )
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["id"] for r in replies] == [0, 1, 2]
    assert replies[0]["result"]["protocolVersion"] == "2025-11-25"
    assert replies[1]["result"]["tools"][0]["name"] == "planted_project_mcp_json"
    assert replies[2]["error"]["code"] == -32601
    assert (state / MARKER_DIR / "project-mcp-json").is_file()
    assert "project-mcp-json" in {i.slug for i in items}


def test_the_probe_seed_runs_a_shell_command_in_every_arm() -> None:
    """Codex's planted rules forbid `ls` (project) and `python3` (user): certify's seed must
    make the scripted model run both, whatever the arm."""
    choices = ScriptChoices.draw(PROBE_TASK, PROBE_SEED, 0.0)
    assert choices.list_files and choices.compile_check and choices.variant == "correct"


def test_offered_mcp_servers_are_read_from_both_request_shapes() -> None:
    claude = {
        "tools": [
            {"name": "Read"},
            {"name": "mcp__token-optimizer__read_file", "defer_loading": True},
            {"name": "mcp__pairlab-planted-project-mcp-json__planted_project_mcp_json"},
        ]
    }
    assert REAL_CLIS["claude"].offered_servers(claude) == {
        "token-optimizer",
        "pairlab-planted-project-mcp-json",
    }
    search = (
        "# Tool discovery\n\nYou have access to tools from the following sources:\n"
        "- Multi-agent tools: Spawn and manage sub-agents.\n"
        "- token-optimizer: read_file reads workspace files.\n"
        "- pairlab-planted-project-config-mcp-server\n"
        "Some of the tools may not have been provided to you upfront."
    )
    codex = {
        "tools": [
            {"type": "function", "name": "exec_command"},
            {"type": "tool_search", "description": search},
            {"type": "namespace", "name": "mcp__other_server", "tools": []},
        ]
    }
    assert REAL_CLIS["codex"].offered_servers(codex) == {
        "token-optimizer",
        "pairlab-planted-project-config-mcp-server",
        "other_server",
    }
    assert (
        REAL_CLIS["codex"].offered_servers({"tools": [{"type": "function", "name": "mcp__x"}]})
        == set()
    )


@pytest.mark.parametrize(
    ("client", "path"), [("claude", ".claude/.claude.json"), ("codex", ".codex/config.toml")]
)
def test_the_intervention_is_planted_under_its_own_name_in_the_user_config(
    client: str, path: str, tmp_path: Path
) -> None:
    items = plant(client, tmp_path / "home", tmp_path / "ws", "mcp-server-git")
    (own,) = [i for i in items if "intervention" in i.slug]
    assert (own.slug, own.scope, own.path, own.evidence) == (
        "user-intervention-server",
        "user",
        path,
        ("marker",),
    )
    text = (tmp_path / "home" / path).read_text()
    assert "mcp-server-git" in text and own.slug in text  # the planted script, its marker slug
    assert "mcp-server-git" not in "".join(
        p.read_text() for p in (tmp_path / "ws").rglob("*.*") if p.suffix in (".json", ".toml")
    )
    assert not [
        i for i in plant(client, tmp_path / "h2", tmp_path / "w2") if "intervention" in i.slug
    ]


DEFERRED = (
    "\nThe following deferred tools are now available via ToolSearch. Their schemas are NOT "
    'loaded. Use ToolSearch with query "select:<name>" to load tool schemas before calling '
    "them:\nCronCreate\nmcp__mcp-server-git__git_add\nmcp__mcp-server-git__git_status\n"
    "mcp__other__x\n"
)


def test_what_a_request_carried_of_the_server_and_its_token_cost() -> None:
    from pairlab.adapters.certify.live import definition_tokens
    from pairlab.core.accounting.tokenizer import load_token_counter

    counter = load_token_counter()
    status = {"name": "mcp__mcp-server-git__git_status", "description": "Shows the status"}
    claude = {
        "tools": [{"name": "Read"}, status],
        "messages": [{"role": "user", "content": [{"type": "text", "text": DEFERRED}]}],
    }
    listing = REAL_CLIS["claude"].server_listing(claude, "mcp-server-git")
    assert listing.tools == ("mcp__mcp-server-git__git_add", "mcp__mcp-server-git__git_status")
    assert listing.definitions == (status,)  # the loaded one, as carried
    assert listing.texts == ("mcp__mcp-server-git__git_add",)  # the deferred one: its name
    assert definition_tokens(listing, counter) == counter.count(
        json.dumps([status], separators=(",", ":"))
    ) + counter.count("mcp__mcp-server-git__git_add")
    assert REAL_CLIS["claude"].offered_servers(claude) == {"mcp-server-git", "other"}
    search = "sources:\n- mcp-server-git\n- mcp_other: x\nSome tools"
    namespace = {"type": "namespace", "name": "mcp__mcp_server_git", "tools": [{"name": "git_log"}]}
    codex = {"tools": [{"type": "tool_search", "description": search}, namespace]}
    listing = REAL_CLIS["codex"].server_listing(codex, "mcp-server-git")
    assert listing.tools == ("mcp__mcp_server_git/git_log",)
    assert (listing.definitions, listing.texts) == ((namespace,), ("- mcp-server-git",))
    empty = REAL_CLIS["codex"].server_listing({"tools": []}, "mcp-server-git")
    assert not empty.listed and definition_tokens(empty, counter) == 0
