"""What pairlab knows about one real CLI, as one record: :class:`RealCli`.

Each real CLI has one module (``clients.claude``, ``clients.codex``) defining its
record; ``clients.registry.REAL_CLIS`` holds them, keyed by the profile's ``client``.
Call sites look the record up instead of branching on the client's name. The usage
readers (``adapters.usage``) and quota probes (``adapters.quota``) keep their own
tables; a record names its reader by key (``usage_reader``).

Stdout is read as JSON lines (:func:`json_lines`): lines that are not JSON objects
are skipped; a missing answer or usage is None (null is not zero).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from pairlab.core.errors import EnvironmentUnavailable, ReasonCode
from pairlab.core.intervention_health import ServerReport, ToolCallsSeen
from pairlab.core.schemas.usage import UsageVector

Scope = Literal["user", "project"]
TextKind = Literal["memory", "skill", "rule", "command", "agent"]


class Planter(Protocol):
    """What a CLI's ``plant_config`` writes through (``certify.planted_config`` implements
    it): the CLI says where each item goes; certify says what it holds and its side effect."""

    hook_events: tuple[str, ...]

    def text(self, scope: Scope, slug: str, path: str, what: str, kind: TextKind) -> None: ...

    def hooks(self, scope: Scope, slug: str, path: str, what: str) -> None: ...

    def claude_mcp(self, scope: Scope, slug: str, path: str, what: str) -> None: ...

    def codex_config(self, scope: Scope, path: str, *, instructions: bool) -> None: ...

    def codex_rules(self, scope: Scope, path: str, command: str) -> None: ...


def no_server_report(stdout: str, stderr: str, home: Path, server_name: str) -> ServerReport | None:
    """A CLI that states nothing about its MCP servers (the ledger alone judges)."""
    return None


def no_tool_calls_seen(stdout: str, server_name: str) -> ToolCallsSeen | None:
    """A CLI whose stdout says nothing of its tool calls (unknown: None)."""
    return None


@dataclass(frozen=True)
class ServerListing:
    """What one request carried of one MCP server: the tool names the model was offered,
    the tool definition objects exactly as the request carried them, and any text that
    names the server without defining its tools (Codex's ``tool_search`` source line)."""

    tools: tuple[str, ...] = ()
    definitions: tuple[Any, ...] = ()
    texts: tuple[str, ...] = ()

    @property
    def listed(self) -> bool:
        return bool(self.tools or self.texts)


def listing_tokens(listing: ServerListing, count: Callable[[str], int]) -> int:
    """The token cost (``count``: the cl100k counter) of what one request carried of an MCP
    server, where the CLI put it in the request body:

    * the tool definition objects the request carried, exactly as carried (Claude: each
      ``mcp__<server>__<tool>`` entry of ``tools`` -- name, description, input_schema and
      whatever else the CLI put there; Codex: the server's ``namespace`` entry with its
      tools), serialized as one compact JSON array (``separators=(",", ":")``, non-ASCII
      kept), as the research counted definitions (docs/research/third-party-mcp);
    * plus the lines that name the server's tools or the server without defining them,
      joined by newlines: both CLIs defer MCP tools behind a tool search -- Claude Code
      names each deferred tool on a line of a ``<system-reminder>``, Codex names the
      server on a line of its ``tool_search`` description -- and until a search loads a
      tool, that line is all the request carries of it.

    Once a search loaded some of the server's tools, their definitions are carried too
    (Claude: in ``tools``; Codex: the namespace definitions in the ``tool_search_output``
    items of the input, resent with every later request) and counted above. Nothing else
    is counted: not the server's instructions, not the search tool's own definition, not
    other tool calls or results. 0 when the request carried nothing of the server."""
    total = 0
    if listing.definitions:
        total += count(
            json.dumps(list(listing.definitions), separators=(",", ":"), ensure_ascii=False)
        )
    if listing.texts:
        total += count("\n".join(listing.texts))
    return total


@dataclass(frozen=True)
class RealCli:
    """One real CLI: its wheel and binary, how to read its output, where its transcripts
    land, which MCP servers its requests offer and the full config certify plants for it."""

    name: str
    import_name: str  # the Python package that carries the binary (found, never imported)
    wheel: str  # its PyPI wheel
    # (binary, directories to put on PATH) inside the installed package, unchecked
    locate: Callable[[Path], tuple[Path, tuple[Path, ...]]]
    read_version: Callable[[Path], str]  # the binary's version; raises when unreadable
    declared_version: Callable[[Path], str | None]  # what the wheel's metadata names, if any
    headless_flags: tuple[str, ...]  # the non-interactive flags (shared/REAL-CLIS.md)
    usage_reader: str  # its key in ``adapters.usage.READERS``
    transcript_dir: str  # under HOME: where the CLI writes its session transcripts (*.jsonl)
    final_answer: Callable[[str], str | None]  # from the CLI's stdout
    own_usage: Callable[[str], UsageVector | None]  # the usage the CLI itself states on stdout
    offered_servers: Callable[[dict[str, Any]], set[str]]  # MCP servers in one request body
    # what one request body carried of the named MCP server (certify's listed tools)
    server_listing: Callable[[dict[str, Any], str], ServerListing]
    plant_config: Callable[[Planter], None]  # certify's full user + project config
    # its own account of an intervention's server (stdout, stderr, collected HOME, server
    # name): how the connection went (core/intervention_health); None where it has none
    server_report: Callable[[str, str, Path, str], ServerReport | None] = no_server_report
    # its transcript's account of the intervention's tool calls (stdout, server name):
    # how many, how many failed; None where its stdout holds no event to read
    tool_calls_seen: Callable[[str, str], ToolCallsSeen | None] = no_tool_calls_seen


def unavailable(name: str, wheel: str, detail: str) -> EnvironmentUnavailable:
    """A missing or broken CLI: exit 3 with the fix."""
    return EnvironmentUnavailable(
        f"the real {name} CLI is not available: {detail} (install the pinned wheel "
        f"'{wheel}' with `uv sync --frozen`)",
        reason=ReasonCode.CLI_UNAVAILABLE,
    )


def json_lines(stdout: str) -> Iterator[dict[str, Any]]:
    """The JSON objects among ``stdout``'s lines (anything else is skipped)."""
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


__all__ = ["Planter", "RealCli", "Scope", "TextKind", "json_lines", "unavailable"]
