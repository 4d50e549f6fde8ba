"""Codex: everything pairlab knows about it, as the :data:`CODEX` record.

* **Binary**: the ``openai-codex-cli-bin`` wheel carries it at
  ``codex_cli_bin/bin/codex`` (its helper ``rg`` in ``codex_cli_bin/codex-path``);
  its version is the last word of ``codex --version`` ("codex-cli 0.163.0"), checked
  against the wheel's ``codex-package.json``.
* **Headless run**: ``exec`` then :data:`CODEX_EXEC_FLAGS`; ``-c`` overrides go after
  ``exec`` too -- measured with 0.163.0, ``-c mcp_servers.X={...}`` before ``exec``
  starts no server (a provider override there does apply).
* **Stdout** (``exec --json``): ``item.completed`` events (``agent_message`` items
  carry the text) and ``turn.completed`` with the thread's **cumulative** usage
  (``input_tokens`` includes cached and written tokens).
* **Transcripts**: ``$HOME/.codex/sessions/**/*.jsonl`` (read by ``usage.codex``).
* **MCP servers offered** in a request: its MCP namespaces and the sources its tool
  search names (built-in sources have spaces in their names).
* **Certify's planted config**: ``config.toml`` (an MCP server, developer
  instructions), AGENTS.md, skills, execpolicy rules and hooks at user
  (``$CODEX_HOME``) and project scope.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Final

from pairlab.adapters.clients.base import (
    Planter,
    RealCli,
    ServerListing,
    json_lines,
    unavailable,
)
from pairlab.adapters.usage.codex import codex_vector
from pairlab.core.intervention_health import Connection, ServerReport, ToolCallsSeen
from pairlab.core.schemas.usage import UsageVector

WHEEL: Final = "openai-codex-cli-bin"
CODEX_EXEC_FLAGS: Final = (
    "--skip-git-repo-check",
    "--json",
    "--dangerously-bypass-approvals-and-sandbox",
    "--disable",
    "plugins",
    "--disable",
    "unbounded_connection_retries",
)
_VERSION_TIMEOUT_S: Final = 20.0
_SOURCE_LINE = re.compile(r"^- ([A-Za-z0-9_.-]+)(?::|$)", re.M)
_TURN_USAGE_FIELDS: Final = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
)


def _locate(package: Path) -> tuple[Path, tuple[Path, ...]]:
    return package / "bin" / "codex", (package / "bin", package / "codex-path")


def _read_version(binary: Path) -> str:
    """``codex --version``, run with a throwaway HOME: even this command sets up its
    helper links under ``$CODEX_HOME/tmp`` (default ``~/.codex/tmp``), and a version
    probe must leave the user's home untouched."""
    try:
        with tempfile.TemporaryDirectory(prefix="pairlab-codex-version-") as home:
            env = {k: v for k, v in os.environ.items() if k != "CODEX_HOME"}
            done = subprocess.run(
                [str(binary), "--version"],
                capture_output=True,
                text=True,
                timeout=_VERSION_TIMEOUT_S,
                check=False,
                stdin=subprocess.DEVNULL,
                env={**env, "HOME": home},
            )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise unavailable("codex", WHEEL, f"`{binary} --version` failed ({exc})") from exc
    words = done.stdout.split()
    if done.returncode != 0 or not words:
        detail = f"`{binary} --version` exited {done.returncode}: {done.stderr.strip()[:200]}"
        raise unavailable("codex", WHEEL, detail)
    return words[-1]  # "codex-cli 0.163.0"


def _declared_version(binary: Path) -> str | None:
    """The version the wheel's own metadata names (codex-package.json), for cross-checking."""
    try:
        meta = json.loads((binary.parent.parent / "codex-package.json").read_text())
    except (OSError, ValueError):
        return None
    version = meta.get("version") if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def codex_final_answer(stdout: str) -> str | None:
    """The text of the last ``agent_message`` item."""
    answer = None
    for obj in json_lines(stdout):
        item = obj.get("item")
        if (
            obj.get("type") == "item.completed"
            and isinstance(item, dict)
            and item.get("type") == "agent_message"
            and isinstance(item.get("text"), str)
        ):
            answer = item["text"]
    return answer


def codex_turn_usage(stdout: str) -> UsageVector | None:
    """The vector of the last ``turn.completed`` usage (cumulative for the thread)."""
    usage = None
    for obj in json_lines(stdout):
        if obj.get("type") == "turn.completed" and isinstance(obj.get("usage"), dict):
            usage = obj["usage"]
    if usage is None:
        return None
    return codex_vector(
        {f: usage[f] if isinstance(usage.get(f), int) else None for f in _TURN_USAGE_FIELDS}
    )


def codex_tool_calls_seen(stdout: str, server_name: str) -> ToolCallsSeen | None:
    """The server's calls in the ``--json`` transcript (``item.completed`` items of type
    ``mcp_tool_call``) and how many ended ``status: failed`` -- an ``isError: true``
    result (which Codex sends the model as plain text) or a JSON-RPC error (measured with
    0.163.0). None: no event on stdout."""
    calls = errors = 0
    any_event = False
    for obj in json_lines(stdout):
        any_event = any_event or isinstance(obj.get("type"), str)
        item = obj.get("item")
        if (
            obj.get("type") == "item.completed"
            and isinstance(item, dict)
            and item.get("type") == "mcp_tool_call"
            and item.get("server") == server_name
        ):
            calls += 1
            errors += item.get("status") == "failed" or item.get("error") is not None
    return ToolCallsSeen(calls=calls, errors=errors) if any_event else None


def codex_offered_servers(body: dict[str, Any]) -> set[str]:
    """The request's MCP namespaces and the sources its ``tool_search`` tool names."""
    found: set[str] = set()
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        name = tool.get("name")
        if tool.get("type") == "namespace" and isinstance(name, str):
            found.add(name.removeprefix("mcp__"))
        elif tool.get("type") == "tool_search":
            found.update(_SOURCE_LINE.findall(str(tool.get("description") or "")))
    return found


_REQUIRED_FAILED = re.compile(r"required MCP servers failed to initialize: (.*)$", re.M)


def codex_server_report(
    stdout: str, stderr: str, home: Path, server_name: str
) -> ServerReport | None:
    """Codex's account of a ``required`` server that failed: it refuses to start the
    session (exit 1, no model request) and says why on stderr -- ``<server>: timed out
    handshaking with MCP server after <s>`` (a timeout) or ``<server>: handshaking with
    MCP server failed: ...`` (the command failed or exited first). None: it said
    nothing about the server (the ledger judges)."""
    for found in _REQUIRED_FAILED.findall(stderr):
        line = str(found).strip()
        if not line.startswith(f"{server_name}:"):
            continue
        connection: Connection = "timeout" if "timed out" in line else "start-failed"
        return ServerReport(connection, detail=f"codex: {line}")
    return None


def _search_loaded(body: dict[str, Any], normal: str) -> list[dict[str, Any]]:
    """The server's namespace definitions that the request's ``tool_search_output`` items
    carry (in order), as carried."""
    found: list[dict[str, Any]] = []
    raw = body.get("input")
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict) or item.get("type") != "tool_search_output":
            continue
        for spec in item.get("tools") or []:
            if not isinstance(spec, dict) or spec.get("type") != "namespace":
                continue
            name = spec.get("name")
            if isinstance(name, str) and name.removeprefix("mcp__").replace("-", "_") == normal:
                found.append(spec)
    return found


def codex_server_listing(body: dict[str, Any], server: str) -> ServerListing:
    """The request's ``mcp__<server>`` namespace (Codex writes ``-`` as ``_`` there): its
    tools' names and the namespace's definition; and the line of the ``tool_search``
    description that names the server (Codex defers MCP tools behind the search: until a
    search loads them, that line is all the request carries of the server).

    The tools a search loaded count as listed too, with their definitions: Codex never
    adds them to ``tools``; their namespace definitions reach the model in the
    ``tool_search_output`` items of the request's input, resent with every later request
    (as Claude Code's loaded definitions are in its ``tools``)."""
    normal = server.replace("-", "_")
    tools: list[str] = []
    definitions: list[Any] = []
    texts: list[str] = []
    for spec in body.get("tools") or []:
        if not isinstance(spec, dict):
            continue
        name = spec.get("name")
        if spec.get("type") == "namespace" and isinstance(name, str):
            if name.removeprefix("mcp__").replace("-", "_") == normal:
                definitions.append(spec)
                tools += [
                    f"{name}/{t.get('name')}"
                    for t in spec.get("tools") or []
                    if isinstance(t, dict)
                ]
        elif spec.get("type") == "tool_search":
            for line in str(spec.get("description") or "").splitlines():
                match = _SOURCE_LINE.match(line)
                if match and match.group(1).replace("-", "_") == normal:
                    texts.append(line)
    for spec in _search_loaded(body, normal):
        definitions.append(spec)
        tools += [
            f"{spec['name']}/{t.get('name')}"
            for t in spec.get("tools") or []
            if isinstance(t, dict) and f"{spec['name']}/{t.get('name')}" not in tools
        ]
    return ServerListing(tools=tuple(tools), definitions=tuple(definitions), texts=tuple(texts))


def plant_codex(p: Planter) -> None:
    """Every item a Codex user could have installed, at user ($CODEX_HOME) and project scope."""
    hooks = f"hooks.json ({', '.join(p.hook_events)})"
    p.codex_config("user", ".codex/config.toml", instructions=False)
    p.text("user", "agents-md", ".codex/AGENTS.md", "AGENTS.md ($CODEX_HOME)", "memory")
    user_skill = "skills/pairlab-planted-user-skill/SKILL.md"
    p.text("user", "skill", f".codex/{user_skill}", "skill", "skill")
    p.text("user", "agents-skill", f".agents/{user_skill}", "user skill", "skill")
    # the compile check every arm runs (certify's seed) -- forbidden if the rule loads
    p.codex_rules("user", ".codex/rules/pairlab-planted.rules", "python3")
    p.hooks("user", "hooks-json", ".codex/hooks.json", hooks)
    p.codex_config("project", ".codex/config.toml", instructions=True)
    p.text("project", "agents-md", "AGENTS.md", "project doc (AGENTS.md)", "memory")
    p.codex_rules("project", ".codex/rules/pairlab-planted.rules", "ls")
    p.hooks("project", "hooks-json", ".codex/hooks.json", hooks)
    project_skill = "skills/pairlab-planted-project-skill/SKILL.md"
    p.text("project", "agents-skill", f".agents/{project_skill}", "skill", "skill")
    p.text("project", "codex-skill", f".codex/{project_skill}", "skill", "skill")


CODEX: Final = RealCli(
    name="codex",
    import_name="codex_cli_bin",
    wheel=WHEEL,
    locate=_locate,
    read_version=_read_version,
    declared_version=_declared_version,
    headless_flags=CODEX_EXEC_FLAGS,
    usage_reader="codex",
    transcript_dir=".codex/sessions",
    final_answer=codex_final_answer,
    own_usage=codex_turn_usage,
    offered_servers=codex_offered_servers,
    server_listing=codex_server_listing,
    plant_config=plant_codex,
    server_report=codex_server_report,
    tool_calls_seen=codex_tool_calls_seen,
)

__all__ = [
    "CODEX",
    "CODEX_EXEC_FLAGS",
    "codex_final_answer",
    "codex_offered_servers",
    "codex_server_listing",
    "codex_tool_calls_seen",
    "codex_turn_usage",
    "plant_codex",
]
