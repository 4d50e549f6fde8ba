"""Ledger rows exactly per the token accounting contract, appended to the episode's JSONL.

A row names two materialized payloads by their exact UTF-8 byte counts, SHA-256
fingerprints and local cl100k token counts -- never their text. A reduction is
written for every preview (before = the whole file the tool would have returned,
returned = the preview actually sent; saved = before - returned); an expansion
for every ``expand`` (returned = the text sent), linked by the preview's
``expansion_ref``. The identity is (process, session, rpc): a client's retry of
the same call repeats it, and the ledger store (pairlab.adapters.mcp_ledger.db)
keeps the first row only -- the file keeps every attempt, so the retry stays
visible as a counted duplicate.

Every row is checked with pairlab's own :func:`qualify_row` before it is
written; a row that would not qualify is still written (nothing is lost) and
the server reports it on stderr -- that would be a bug here, not a measurement.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pairlab.core.accounting.ledger_rules import (
    LEDGER_SCHEMA_VERSION,
    Qualification,
    qualify_row,
)


@dataclass(frozen=True)
class Payload:
    """One materialized payload, measured: exact bytes, fingerprint, local tokens."""

    size_bytes: int
    sha256: str
    tokens: int

    @classmethod
    def measure(cls, text: str, count: Callable[[str], int]) -> Payload:
        return cls.counted(text, count(text))

    @classmethod
    def counted(cls, text: str, tokens: int) -> Payload:
        """``text`` whose cl100k token count is already known."""
        data = text.encode("utf-8")
        return cls(len(data), hashlib.sha256(data).hexdigest(), tokens)


@dataclass(frozen=True)
class RequestIdentity:
    process_id: str
    session_id: str
    rpc_id: str
    # the client's own id of the tool call (Claude's tool_use id, Codex's call_id); None when
    # the client sent none and ``rpc_id`` is the JSON-RPC id (the labelled fallback join)
    client_call_id: str | None = None


def _now() -> str:
    return datetime.now(UTC).isoformat()


def reduction_row(
    identity: RequestIdentity,
    tool: str,
    before: Payload,
    returned: Payload,
    ref: str,
    tokenizer: str,
) -> dict[str, Any]:
    return {
        "schema_version": LEDGER_SCHEMA_VERSION,
        "kind": "reduction",
        "process_id": identity.process_id,
        "session_id": identity.session_id,
        "rpc_id": identity.rpc_id,
        "tool": tool,
        "recorded_at": _now(),
        "before_bytes": before.size_bytes,
        "returned_bytes": returned.size_bytes,
        "delta_bytes": before.size_bytes - returned.size_bytes,
        "before_sha256": before.sha256,
        "returned_sha256": returned.sha256,
        "before_tokens": before.tokens,
        "returned_tokens": returned.tokens,
        "saved_tokens": before.tokens - returned.tokens,
        "tokenizer": tokenizer,
        "expansion_ref": ref,
        "provenance": "measured",
    }


def expansion_row(
    identity: RequestIdentity, tool: str, returned: Payload, ref: str, tokenizer: str
) -> dict[str, Any]:
    return {
        "schema_version": LEDGER_SCHEMA_VERSION,
        "kind": "expansion",
        "process_id": identity.process_id,
        "session_id": identity.session_id,
        "rpc_id": identity.rpc_id,
        "tool": tool,
        "recorded_at": _now(),
        "before_bytes": None,
        "returned_bytes": returned.size_bytes,
        "delta_bytes": None,
        "before_sha256": None,
        "returned_sha256": returned.sha256,
        "before_tokens": None,
        "returned_tokens": returned.tokens,
        "saved_tokens": None,
        "tokenizer": tokenizer,
        "expansion_ref": ref,
        "provenance": "measured",
    }


class LedgerFile:
    """Appends rows as JSON lines under an exclusive lock (several servers may share a file)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, row: dict[str, Any]) -> Qualification:
        verdict = qualify_row(row)
        line = (json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)  # closing releases the lock
        return verdict
