"""Simulated MCP transport measurements: payloads of known cl100k size and ledger rows.

Payload texts are built only from pieces that are exactly one cl100k token each
and that cl100k's pre-tokenizer never merges: a space followed by a short
lowercase word (verified single tokens) and a lone newline between words. So a
payload of n pieces has exactly n tokens, and the simulator can write exact
``*_tokens`` without a tokenizer (tests/unit/test_simclient_ledger_tokens.py
recounts them with tiktoken). Payloads are kept in memory only; rows carry their
UTF-8 byte counts and SHA-256 fingerprints, never the text (LEDGER ROW format in
the helper interfaces).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pairlab_simclient.episode_env import format_ts

WORDS = (
    " the",
    " file",
    " function",
    " return",
    " value",
    " data",
    " line",
    " code",
    " test",
    " error",
    " module",
    " class",
    " import",
    " result",
    " output",
    " input",
    " buffer",
    " cache",
    " index",
    " table",
    " query",
    " record",
    " field",
    " string",
    " number",
    " list",
    " item",
    " node",
    " graph",
    " path",
    " config",
    " server",
    " client",
    " request",
    " response",
    " handler",
    " parser",
    " token",
    " search",
    " match",
    " source",
    " target",
    " update",
    " delete",
    " create",
    " read",
    " write",
    " open",
    " close",
)
# One word per hex nibble: the preview spells its content-addressed expansion ref.
NIBBLE_WORDS = (
    " zero",
    " one",
    " two",
    " three",
    " four",
    " five",
    " six",
    " seven",
    " eight",
    " nine",
    " ten",
    " eleven",
    " twelve",
    " thirteen",
    " fourteen",
    " fifteen",
)
NEWLINE = "\n"
REF_HEADER = (" expand", " with", " ref")

REDUCTION_TOOLS = ("read_file", "search_code", "list_directory", "run_tests")


@dataclass(frozen=True)
class Payload:
    text: str
    tokens: int

    @property
    def size_bytes(self) -> int:
        return len(self.text.encode("utf-8"))

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def build_payload(rng: random.Random, n_tokens: int, suffix: tuple[str, ...] = ()) -> Payload:
    """A text of exactly ``n_tokens`` cl100k tokens (suffix pieces included)."""
    if n_tokens < len(suffix) + 1:
        raise ValueError("payload too small for its suffix")
    pieces: list[str] = []
    body = n_tokens - len(suffix)
    previous_newline = True  # never start with, or repeat, a newline (\n\n is one token)
    for i in range(body):
        last = i == body - 1
        if not previous_newline and not last and rng.random() < 0.08:
            pieces.append(NEWLINE)
            previous_newline = True
        else:
            pieces.append(rng.choice(WORDS))
            previous_newline = False
    pieces.extend(suffix)
    return Payload(text="".join(pieces), tokens=len(pieces))


def ref_words(ref_hex: str) -> tuple[str, ...]:
    return REF_HEADER + tuple(NIBBLE_WORDS[int(c, 16)] for c in ref_hex)


@dataclass(frozen=True)
class LedgerEntry:
    row: dict[str, Any]
    before: Payload | None
    returned: Payload


def _row(
    kind: str,
    identity: tuple[str, str, str],
    tool: str,
    at: datetime,
    before: Payload | None,
    returned: Payload,
    ref: str,
    provenance: str,
) -> dict[str, Any]:
    process_id, session_id, rpc_id = identity
    return {
        "schema_version": 2,
        "kind": kind,
        "process_id": process_id,
        "session_id": session_id,
        "rpc_id": rpc_id,
        "tool": tool,
        "recorded_at": format_ts(at),
        "before_bytes": before.size_bytes if before else None,
        "returned_bytes": returned.size_bytes,
        "delta_bytes": before.size_bytes - returned.size_bytes if before else None,
        "before_sha256": before.sha256 if before else None,
        "returned_sha256": returned.sha256,
        "before_tokens": before.tokens if before else None,
        "returned_tokens": returned.tokens,
        "saved_tokens": before.tokens - returned.tokens if before else None,
        "tokenizer": "cl100k_base",
        "expansion_ref": ref,
        "provenance": provenance,
    }


def build_ledger(
    rng: random.Random, arm: str, session_id: str, started_at: datetime, retry_p: float
) -> list[LedgerEntry]:
    """The ledger rows of one treated episode, in write order (retries included)."""
    process_id = f"simmcp-{rng.getrandbits(32):08x}"
    entries: list[LedgerEntry] = []
    previews: list[tuple[str, Payload]] = []
    rpc = 0
    at = started_at
    n_reductions = rng.randint(1, 3) if arm == "optimizer" else rng.randint(2, 4)
    for _ in range(n_reductions):
        rpc += 1
        at += timedelta(seconds=rng.uniform(0.5, 4.0))
        before = build_payload(rng, rng.randint(600, 4000))
        ref = f"sha256:{before.sha256}"
        returned = build_payload(rng, rng.randint(120, 500), ref_words(before.sha256))
        tool = rng.choice(REDUCTION_TOOLS)
        row = _row(
            "reduction",
            (process_id, session_id, str(rpc)),
            tool,
            at,
            before,
            returned,
            ref,
            "measured",
        )
        entries.append(LedgerEntry(row, before, returned))
        previews.append((ref, before))
    if arm in ("retrieval", "full"):
        # a graph substitution: a claim about reuse, never verified transport savings
        rpc += 1
        at += timedelta(seconds=rng.uniform(0.5, 2.0))
        before = build_payload(rng, rng.randint(800, 2500))
        returned = build_payload(rng, rng.randint(60, 200))
        row = _row(
            "reduction",
            (process_id, session_id, str(rpc)),
            "graph_lookup",
            at,
            before,
            returned,
            f"sha256:{before.sha256}",
            "graph-substitution",
        )
        entries.append(LedgerEntry(row, before, returned))
    if arm == "full":
        ref, before = previews[rng.randrange(len(previews))]
        rpc += 1
        at += timedelta(seconds=rng.uniform(0.5, 3.0))
        expanded = build_payload(rng, rng.randint(200, min(1500, before.tokens)))
        row = _row(
            "expansion",
            (process_id, session_id, str(rpc)),
            "expand",
            at,
            None,
            expanded,
            ref,
            "measured",
        )
        entries.append(LedgerEntry(row, None, expanded))
    if rng.random() < retry_p:
        # a retried request: same process/session/rpc identity written again
        original = entries[rng.randrange(len(entries))]
        retry_row = dict(original.row)
        retry_row["recorded_at"] = format_ts(at + timedelta(seconds=1))
        entries.append(LedgerEntry(retry_row, original.before, original.returned))
    return entries


def summarize_ledger(entries: list[LedgerEntry]) -> dict[str, Any]:
    """What a correct audit of these rows reports (retries count once)."""
    seen: set[tuple[str, str, str]] = set()
    gross = debit = excluded = 0
    retried: list[str] = []
    for entry in entries:
        row = entry.row
        key = (row["process_id"], row["session_id"], row["rpc_id"])
        if key in seen:
            retried.append(row["rpc_id"])
            continue
        seen.add(key)
        if row["provenance"] != "measured":
            excluded += 1
        elif row["kind"] == "reduction":
            gross += row["saved_tokens"]
        else:
            debit += row["returned_tokens"]
    return {
        "rows_written": len(entries),
        "unique_requests": len(seen),
        "retried_rpc_ids": retried,
        "gross_reduction_tokens": gross,
        "expansion_debit_tokens": debit,
        "net_verified_tokens": gross - debit,
        "excluded_rows": excluded,
    }
