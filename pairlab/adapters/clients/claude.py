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
* **Certify's planted config**: hooks, rules, skills, commands, agents and memory at
  user (``$CLAUDE_CONFIG_DIR``) and project scope, and an MCP server in each of
  ``.claude.json`` and ``.mcp.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from pairlab.adapters.clients.base import Planter, RealCli, Scope, json_lines, unavailable
from pairlab.adapters.usage.claude import claude_vector
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
    """The servers of the request's ``mcp__<server>__<tool>`` tools."""
    found: set[str] = set()
    for tool in body.get("tools") or []:
        name = tool.get("name") if isinstance(tool, dict) else None
        if isinstance(name, str) and name.startswith("mcp__"):
            found.add(name.split("__")[1])
    return found


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
    plant_config=plant_claude,
)

__all__ = [
    "CLAUDE",
    "CLAUDE_PRINT_FLAGS",
    "claude_final_answer",
    "claude_offered_servers",
    "claude_result_usage",
    "plant_claude",
]
