"""What a tool is, and the context every tool call gets.

A :class:`Tool` is a row of the tool table (:mod:`pairlab.intervention.tool_table`):
its MCP description, the arms that get it and a handler ``(context, call) -> text``.
A handler refuses by raising :class:`ToolFailure` (the client shows the message
to the model as the tool's error result); anything else it raises is a bug,
reported the same way with its type. Issue 18's retrieval and harvest tools are
more rows of the same table.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pairlab.core.accounting.tokenizer import TokenCounter, load_token_counter
from pairlab.intervention.content_store import ContentStore
from pairlab.intervention.ledger_rows import LedgerFile, RequestIdentity
from pairlab.intervention.settings import ServerSettings

# MCP revisions from which a tool description may carry these fields.
_ANNOTATIONS_FROM = "2025-03-26"
_TITLE_FROM = "2025-06-18"


class ToolFailure(Exception):
    """The tool refused the call; ``str(exc)`` is the message for the model."""


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Mapping[str, object]
    identity: RequestIdentity


class ToolContext:
    """Per-process state shared by the tools: settings, content store, ledger, tokenizer."""

    def __init__(self, settings: ServerSettings, process_id: str) -> None:
        self.settings = settings
        self.process_id = process_id
        self.store = ContentStore()
        self.ledger = LedgerFile(settings.ledger_path) if settings.ledger_path else None
        self._counter: TokenCounter | None = None
        self._counter_lock = threading.Lock()

    @property
    def counter(self) -> TokenCounter:
        with self._counter_lock:
            if self._counter is None:
                self._counter = load_token_counter()
            return self._counter

    def preload(self) -> None:
        """Load the tokenizer in the background so the first call does not wait for it."""
        threading.Thread(target=lambda: self.counter, daemon=True).start()

    def count(self, text: str) -> int:
        return self.counter.count(text)

    def log_call(self, call: ToolCall, *, is_error: bool) -> None:
        """Every tool call is a ``call`` event of the evidence log (the join's unit)."""
        if self.settings.state_dir is None:
            return
        from pairlab.intervention.evidence_log import EvidenceLog

        EvidenceLog(self.settings.state_dir).append(
            call.identity, call.name, [{"event": "call", "isError": is_error}]
        )

    def record(self, row: dict[str, Any]) -> None:
        if self.ledger is None:
            raise ToolFailure("this server has no ledger configured; it cannot measure")
        verdict = self.ledger.append(row)
        if not verdict.is_qualified:
            reasons = ", ".join(str(r) for r in verdict.reasons)
            print(f"token-optimizer: wrote a row that does not qualify: {reasons}", file=sys.stderr)


ToolHandler = Callable[[ToolContext, ToolCall], str]


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_schema: Mapping[str, Any]
    arms: frozenset[str]
    handler: ToolHandler = field(compare=False)
    read_only: bool = True

    def describe(self, protocol_version: str) -> dict[str, Any]:
        """The tools/list entry for a session of ``protocol_version``."""
        entry: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
        }
        if protocol_version >= _TITLE_FROM:
            entry["title"] = self.title
        if protocol_version >= _ANNOTATIONS_FROM:
            entry["annotations"] = {"readOnlyHint": self.read_only, "openWorldHint": False}
        return entry
