"""Real LEDGER ROW dicts for tests: payload text counted with the real cl100k tokenizer."""

from __future__ import annotations

import hashlib
from typing import Any

from pairlab.core.accounting.tokenizer import load_token_counter


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def reduction(
    before: str = "def f(x):\n    return x * 2\n" * 40,
    returned: str = "def f(x): ... (40 similar lines; expand for the rest)",
    *,
    rpc_id: str = "1",
    tool: str = "read_file",
    session_id: str = "s-1",
    process_id: str = "p-1",
    **overrides: Any,
) -> dict[str, Any]:
    counter = load_token_counter()
    before_bytes, returned_bytes = len(before.encode()), len(returned.encode())
    before_tokens, returned_tokens = counter.count(before), counter.count(returned)
    row: dict[str, Any] = {
        "schema_version": 2,
        "kind": "reduction",
        "process_id": process_id,
        "session_id": session_id,
        "rpc_id": rpc_id,
        "tool": tool,
        "recorded_at": "2026-11-29T10:00:00Z",
        "before_bytes": before_bytes,
        "returned_bytes": returned_bytes,
        "delta_bytes": before_bytes - returned_bytes,
        "before_sha256": sha(before),
        "returned_sha256": sha(returned),
        "before_tokens": before_tokens,
        "returned_tokens": returned_tokens,
        "saved_tokens": before_tokens - returned_tokens,
        "tokenizer": "cl100k_base",
        "expansion_ref": "sha256:" + sha(before),
        "provenance": "measured",
    }
    row.update(overrides)
    return row


def expansion(
    of: dict[str, Any],
    returned: str = "def f(x):\n    return x * 2\n" * 40,
    *,
    rpc_id: str = "2",
    tool: str = "expand",
    **overrides: Any,
) -> dict[str, Any]:
    """An expand response for the preview ``of`` (linked through its expansion_ref)."""
    returned_bytes = len(returned.encode())
    row: dict[str, Any] = {
        "schema_version": 2,
        "kind": "expansion",
        "process_id": of["process_id"],
        "session_id": of["session_id"],
        "rpc_id": rpc_id,
        "tool": tool,
        "recorded_at": "2026-11-29T10:01:00Z",
        "before_bytes": None,
        "returned_bytes": returned_bytes,
        "delta_bytes": None,
        "before_sha256": None,
        "returned_sha256": sha(returned),
        "before_tokens": None,
        "returned_tokens": load_token_counter().count(returned),
        "saved_tokens": None,
        "tokenizer": "cl100k_base",
        "expansion_ref": of["expansion_ref"],
        "provenance": "measured",
    }
    row.update(overrides)
    return row
