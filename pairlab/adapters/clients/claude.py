"""Claude Code: everything pairlab knows about it, as the :data:`CLAUDE` record.

* **Binary**: the ``claude-agent-sdk`` wheel bundles it at
  ``claude_agent_sdk/_bundled/claude``; its version is the first word of
  ``claude.version`` beside it (no process is started to learn it).
* **Headless run**: ``-p PROMPT`` then :data:`CLAUDE_PRINT_FLAGS` (as root it needs
  ``IS_SANDBOX=1`` for the permission bypass).
* **Stdout** (``--output-format stream-json --verbose``, or ``json``) ends with a
  ``{"type": "result", "result": <final text>, "usage": {...}, "modelUsage": {...}}``
  object; its ``usage`` is the session's aggregate (deduplicated by Claude Code), with
  the 5m/1h cache-write split.
* **Transcripts**: ``$HOME/.claude/projects/**/*.jsonl`` (read by ``usage.claude``).
* **MCP servers offered** in a request: its ``mcp__<server>__<tool>`` tools (deferred
  or not).
* **Its account of an MCP server** (:func:`claude_server_report`): the stream-json
  ``init`` message lists ``mcp_servers`` with a ``status`` (``connected``/``failed``),
  and ``$HOME/.cache/claude-cli-nodejs/<cwd>/mcp-logs-<server>/*.jsonl`` logs the
  connection: ``Successfully connected``, ``Connection failed ... (CONNECT_TIMEOUT)``
  against ``MCP_TIMEOUT`` (ms; the wiring sets the manifest's startup timeout), any
  other ``Connection failed`` (the command failed or exited first), and ``STDIO
  connection closed`` -- after ``Sending SIGINT to MCP server process`` when Claude Code
  ends the episode, without it when the server went away by itself.
* **Certify's planted config**: hooks, rules, skills, commands, agents and memory at
  user (``$CLAUDE_CONFIG_DIR``) and project scope, and an MCP server in each of
  ``.claude.json`` and ``.mcp.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from pairlab.adapters.clients.base import (
    Planter,
    RealCli,
    Scope,
    ServerListing,
    json_lines,
    unavailable,
)
from pairlab.adapters.usage.claude import claude_vector
from pairlab.core.emulator.conversation import claude_conversation
from pairlab.core.intervention_health import Connection, ServerReport, ToolCallsSeen
from pairlab.core.schemas.usage import UsageVector

WHEEL: Final = "claude-agent-sdk"
CLAUDE_PRINT_FLAGS: Final = (
    "--output-format",
    "stream-json",
    "--verbose",
    "--dangerously-skip-permissions",
)


def _locate(package: Path) -> tuple[Path, tuple[Path, ...]]:
    bundled = package / "_bundled"
    return bundled / "claude", (bundled,)


def _read_version(binary: Path) -> str:
    version_file = binary.parent / "claude.version"
    try:
        text = version_file.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise unavailable("claude", WHEEL, f"{version_file} is unreadable ({exc})") from exc
    version = text.split()[0] if text else ""
    if not version:
        raise unavailable("claude", WHEEL, f"{version_file} is empty")
    return version


def _no_declared_version(binary: Path) -> str | None:
    return None  # the version file is the wheel's only statement


def _result(stdout: str) -> dict[str, Any] | None:
    results = [o for o in json_lines(stdout) if o.get("type") == "result"]
    return results[-1] if results else None


def claude_final_answer(stdout: str) -> str | None:
    result = _result(stdout)
    text = result.get("result") if result else None
    return text if isinstance(text, str) else None


def claude_result_usage(stdout: str) -> UsageVector | None:
    """The 7-dimension vector of Claude Code's own result ``usage``."""
    result = _result(stdout)
    usage = result.get("usage") if result else None
    return claude_vector(usage) if isinstance(usage, dict) else None


def claude_offered_servers(body: dict[str, Any]) -> set[str]:
    """The servers of the request's ``mcp__<server>__<tool>`` tools: in ``tools`` or
    listed as deferred (Claude Code defers MCP tools behind ToolSearch, naming them in a
    ``<system-reminder>``; ``core.emulator.conversation`` reads both)."""
    found: set[str] = set()
    for name in claude_conversation(body).offered_names:
        if name.startswith("mcp__"):
            found.add(name.split("__")[1])
    return found


def claude_init_status(stdout: str, server_name: str) -> str | None:
    """The server's ``status`` in the stream-json ``init`` message (None: not listed)."""
    for message in json_lines(stdout):
        if message.get("type") == "system" and message.get("subtype") == "init":
            for server in message.get("mcp_servers") or []:
                if isinstance(server, dict) and server.get("name") == server_name:
                    status = server.get("status")
                    return status if isinstance(status, str) else None
    return None


def _log_messages(home: Path, server_name: str) -> list[str]:
    """The messages of the server's MCP logs under ``home``, in order (none: no log)."""
    messages: list[str] = []
    for path in sorted(home.glob(f".cache/claude-cli-nodejs/*/mcp-logs-{server_name}/*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                text = event.get("error") or event.get("debug")
                if isinstance(text, str):
                    messages.append(text)
    return messages


def classify_claude_mcp_log(messages: list[str]) -> ServerReport | None:
    """How the connection went, per Claude Code's MCP log of one server (None: no log).

    A ``CONNECT_TIMEOUT`` failure is a timeout; any other ``Connection failed`` before a
    connection is a start failure; a ``connection closed`` after ``Successfully
    connected`` that Claude Code did not cause (no ``Sending SIGINT``/``SIGTERM`` to the
    server before it) is an exit."""
    if not messages:
        return None
    connection: Connection | None = None
    exited, stopping, detail = False, False, None
    for text in messages:
        lowered = text.lower()
        if lowered.startswith("successfully connected"):
            connection = "connected"
        elif lowered.startswith("connection failed") and connection != "connected":
            connection = "timeout" if "CONNECT_TIMEOUT" in text else "start-failed"
            detail = f"claude: {text}"
        elif lowered.startswith("sending sig"):
            stopping = True
        elif connection == "connected" and not stopping and "connection closed" in lowered:
            exited, detail = True, f"claude, after connecting: {text}"
    return ServerReport(connection=connection, exited=exited, detail=detail)


def claude_server_report(
    stdout: str, stderr: str, home: Path, server_name: str
) -> ServerReport | None:
    """Claude Code's account of the server: its MCP log, else its ``init`` status."""
    logged = classify_claude_mcp_log(_log_messages(home, server_name))
    status = claude_init_status(stdout, server_name)
    if logged is not None and logged.connection is not None:
        return logged
    if status == "failed":
        return ServerReport("start-failed", detail=f"claude: init lists '{server_name}' as failed")
    if status == "connected":
        return ServerReport("connected", exited=logged.exited if logged else False)
    return logged


def claude_tool_calls_seen(stdout: str, server_name: str) -> ToolCallsSeen | None:
    """The server's ``mcp__<server>__`` calls in the stream-json transcript (assistant
    ``tool_use`` blocks) and how many of their ``tool_result`` blocks came back
    ``is_error`` (a JSON-RPC error and an ``isError: true`` result alike, measured with
    2.1.332). Claude Code's refusal of an oversized result is not ``is_error``: the ledger
    counts those. None: no stream-json event on stdout."""
    prefix = f"mcp__{server_name}__"
    ids: set[str] = set()
    errors, any_event = 0, False
    for message in json_lines(stdout):
        kind = message.get("type")
        any_event = any_event or kind in ("system", "assistant", "user", "result")
        inner = message.get("message")
        content = inner.get("content") if isinstance(inner, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            kind_of = (kind, block.get("type"))
            if kind_of == ("assistant", "tool_use"):
                if str(block.get("name", "")).startswith(prefix):
                    ids.add(str(block.get("id")))
            elif kind_of == ("user", "tool_result") and str(block.get("tool_use_id")) in ids:
                errors += block.get("is_error") is True
    return ToolCallsSeen(calls=len(ids), errors=errors) if any_event else None


def claude_server_listing(body: dict[str, Any], server: str) -> ServerListing:
    """The request's ``mcp__<server>__<tool>`` tools: their names (in ``tools`` or in the
    deferred-tools listing), the definitions of those in ``tools`` (loaded), and the
    deferred listing's lines naming the rest (the names are all the request carries of a
    deferred tool until a ToolSearch loads it)."""
    prefix = f"mcp__{server}__"
    found = [
        tool
        for tool in body.get("tools") or []
        if isinstance(tool, dict) and str(tool.get("name", "")).startswith(prefix)
    ]
    defined = {str(t["name"]) for t in found}
    offered = [n for n in claude_conversation(body).offered_names if n.startswith(prefix)]
    return ServerListing(
        tools=tuple(offered),
        definitions=tuple(found),
        texts=tuple(n for n in offered if n not in defined),
    )


def plant_claude(p: Planter) -> None:
    """Every item a Claude Code user could have installed, once per scope where it applies."""
    events = ", ".join(p.hook_events)
    scope: Scope
    for scope in ("user", "project"):
        p.hooks(scope, "settings-hooks", ".claude/settings.json", f"hooks ({events})")
        # distinct names per scope: a project item of the same name would shadow the user's
        name = f"pairlab-planted-{scope}"
        p.text(scope, "rules", f".claude/rules/{name}-rule.md", "rule file", "rule")
        p.text(scope, "skill", f".claude/skills/{name}-skill/SKILL.md", "skill", "skill")
        p.text(
            scope,
            "command",
            f".claude/commands/{name}-command.md",
            "slash command",
            "command",
        )
        p.text(scope, "agent", f".claude/agents/{name}-agent.md", "subagent", "agent")
    p.text("user", "claude-md", ".claude/CLAUDE.md", "user memory (CLAUDE.md)", "memory")
    p.claude_mcp(
        "user",
        "config-dir-mcp",
        ".claude/.claude.json",
        "MCP server ($CLAUDE_CONFIG_DIR/.claude.json)",
    )
    p.hooks(
        "project", "local-settings-hooks", ".claude/settings.local.json", "local settings hooks"
    )
    p.claude_mcp("project", "mcp-json", ".mcp.json", "project MCP server (.mcp.json)")
    p.text("project", "claude-md", "CLAUDE.md", "project memory (CLAUDE.md)", "memory")
    p.text(
        "project",
        "local-claude-md",
        "CLAUDE.local.md",
        "local memory (CLAUDE.local.md)",
        "memory",
    )


CLAUDE: Final = RealCli(
    name="claude",
    import_name="claude_agent_sdk",
    wheel=WHEEL,
    locate=_locate,
    read_version=_read_version,
    declared_version=_no_declared_version,
    headless_flags=CLAUDE_PRINT_FLAGS,
    usage_reader="claude",
    transcript_dir=".claude/projects",
    final_answer=claude_final_answer,
    own_usage=claude_result_usage,
    offered_servers=claude_offered_servers,
    server_listing=claude_server_listing,
    plant_config=plant_claude,
    server_report=claude_server_report,
    tool_calls_seen=claude_tool_calls_seen,
)

__all__ = [
    "CLAUDE",
    "CLAUDE_PRINT_FLAGS",
    "claude_final_answer",
    "claude_offered_servers",
    "claude_result_usage",
    "claude_server_listing",
    "claude_tool_calls_seen",
    "plant_claude",
]
