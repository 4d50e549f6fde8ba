"""The SQLite ledger: validated writes, retries stored once, the four quantities, read-only audits."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from pairlab.adapters.mcp_ledger.audit import audit_path
from pairlab.adapters.mcp_ledger.db import (
    LedgerWriter,
    ingest_jsonl,
    ledger_totals,
    open_readonly,
    read_ledger,
)
from pairlab.core.errors import InvalidInputError, ReasonCode
from tests.unit.ledger_factory import expansion, reduction


def _write(db: Path, *rows: dict[str, object]) -> list[str]:
    with LedgerWriter(db) as writer:
        return [writer.record(r).status for r in rows]


def test_qualified_row_counts_once_and_retries_are_duplicates(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    row = reduction()
    assert _write(db, row, row, dict(row)) == ["stored", "duplicate", "duplicate"]
    contents = read_ledger(db)
    assert len(contents.rows) == 1
    assert contents.duplicate_attempts == 2
    totals = ledger_totals(db)
    assert totals["gross_reduction_tokens"] == row["saved_tokens"]
    assert totals["verified_net_tokens"] == row["saved_tokens"]
    assert totals["observed_returned_tokens"] == row["returned_tokens"]
    assert totals["expansion_debit_tokens"] == 0
    assert totals["duplicate_retries_ignored"] == 2


def test_retry_with_different_claim_is_still_the_same_request(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    first = reduction()
    inflated = reduction(saved_tokens=first["saved_tokens"] * 10)
    assert _write(db, first, inflated) == ["stored", "duplicate"]
    assert ledger_totals(db)["gross_reduction_tokens"] == first["saved_tokens"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT identical FROM duplicate_attempts").fetchone() == (0,)


def test_same_rpc_other_session_is_a_new_request(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    assert _write(db, reduction(), reduction(session_id="s-2")) == ["stored", "stored"]


def test_the_retry_identity_is_process_session_rpc_and_kind(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    row = reduction(rpc_id="42")
    same_rpc_expansion = expansion(row, rpc_id="42")
    other_process = reduction(rpc_id="42", process_id="p-2")
    assert _write(db, row, same_rpc_expansion, other_process, row) == [
        "stored",
        "stored",
        "stored",
        "duplicate",
    ]
    with sqlite3.connect(db) as conn:
        identities = conn.execute(
            "SELECT process_id, session_id, rpc_id, kind FROM ledger_rows ORDER BY id"
        ).fetchall()
    assert identities[0] == ("p-1", "s-1", "42", "reduction")
    assert identities[1] == ("p-1", "s-1", "42", "expansion")


def test_rejected_rows_are_stored_with_reasons_but_never_count(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    good = reduction(rpc_id="1")
    historical = reduction(rpc_id="2", provenance="historical")
    with LedgerWriter(db) as writer:
        writer.record(good)
        outcome = writer.record(historical)
    assert outcome.status == "stored" and not outcome.is_qualified
    assert outcome.reasons == ("provenance-historical",)
    with sqlite3.connect(db) as conn:
        stored = conn.execute(
            "SELECT rpc_id, qualified, reasons FROM ledger_rows ORDER BY id"
        ).fetchall()
    assert stored == [("1", 1, "[]"), ("2", 0, '["provenance-historical"]')]
    totals = ledger_totals(db)
    assert totals["gross_reduction_tokens"] == good["saved_tokens"]
    assert totals["excluded_rows"] == 1


def test_payload_text_never_reaches_the_database(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    secret = "SECRET-PAYLOAD-" + "x" * 50
    outcome = LedgerWriter(db).record(reduction(before_text=secret, note="n" * 400 + "TAIL-MARK"))
    assert "contents-stored" in outcome.reasons
    data = db.read_bytes()
    assert b"SECRET-PAYLOAD" not in data
    assert b"TAIL-MARK" not in data
    stored = read_ledger(db).rows[0].row
    assert stored["before_text"]["redacted"] is True  # type: ignore[index]
    assert stored["before_text"]["bytes"] == len(secret)  # type: ignore[index]


def test_negative_net_when_expansions_exceed_the_reduction(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    preview = reduction(before="abc " * 30, returned="abc " * 20)
    debit_1 = expansion(preview, returned="abc " * 30, rpc_id="2")
    debit_2 = expansion(preview, returned="abc " * 30, rpc_id="3")
    _write(db, preview, debit_1, debit_2)
    totals = ledger_totals(db)
    gross = preview["saved_tokens"]
    debit = debit_1["returned_tokens"] + debit_2["returned_tokens"]
    assert totals["gross_reduction_tokens"] == gross
    assert totals["expansion_debit_tokens"] == debit
    assert totals["verified_net_tokens"] == gross - debit < 0
    assert totals["observed_returned_tokens"] == preview["returned_tokens"] + debit
    assert totals["orphan_expansions"] == 0


def test_expansion_without_preview_is_debited_and_flagged(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    kept = reduction(rpc_id="1", tool="read_file")
    lost = reduction(before="other text " * 50, rpc_id="9")  # never recorded
    orphan = expansion(lost, rpc_id="2", tool="expand")
    _write(db, kept, orphan)
    totals = ledger_totals(db)
    assert totals["orphan_expansions"] == 1
    assert totals["expansion_debit_tokens"] == orphan["returned_tokens"]
    assert totals["verified_net_tokens"] == kept["saved_tokens"] - orphan["returned_tokens"]
    report = audit_path(db)
    assert report["flags"] == {"expansion-without-preview": 1}
    assert report["by_tool"]["expand"]["expansion_debit_tokens"] == orphan["returned_tokens"]


def test_expansion_of_an_excluded_preview_is_an_orphan(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    preview = reduction(provenance="tool-reported")
    _write(db, preview, expansion(preview))
    totals = ledger_totals(db)
    assert totals["gross_reduction_tokens"] == 0
    assert totals["orphan_expansions"] == 1
    assert totals["verified_net_tokens"] == -expansion(preview)["returned_tokens"]


def test_linked_debit_is_attributed_to_the_preview_tool(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    preview = reduction(tool="search_code")
    exp = expansion(preview, tool="expand")
    _write(db, preview, exp)
    by_tool = audit_path(db)["by_tool"]
    assert set(by_tool) == {"search_code"}
    assert (
        by_tool["search_code"]["verified_net_tokens"]
        == preview["saved_tokens"] - exp["returned_tokens"]
    )


def test_nothing_qualified_means_no_measurement_not_zero(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    _write(db, reduction(provenance="historical"))
    totals = ledger_totals(db)
    assert totals["verified_net_tokens"] is None
    assert totals["gross_reduction_tokens"] is None
    assert totals["excluded_rows"] == 1


def test_boolean_migration_in_the_database_cannot_promote_a_row(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    _write(db, reduction(provenance="historical"))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE ledger_rows SET qualified = 1, reasons = '[]'")
    report = audit_path(db)
    assert report["verified_net_tokens"] is None
    assert report["excluded_by_reason"] == {"provenance-historical": 1}
    assert report["stored_verdicts_overridden"] == 1


def test_ingest_jsonl(tmp_path: Path) -> None:
    preview = reduction()
    lines = [
        json.dumps(preview),
        json.dumps(preview),  # a retry
        "",
        "{not json",
        "[1, 2]",
        json.dumps(expansion(preview)),
        json.dumps(reduction(rpc_id="5", provenance="graph-substitution")),
    ]
    jsonl = tmp_path / "mcp-ledger.jsonl"
    jsonl.write_text("\n".join(lines) + "\n")
    summary = ingest_jsonl(jsonl, tmp_path / "ep" / "ledger.db")
    assert (summary.lines, summary.stored, summary.qualified, summary.excluded) == (6, 3, 2, 1)
    assert (summary.duplicates, summary.malformed) == (1, 2)
    totals = ledger_totals(tmp_path / "ep" / "ledger.db")
    assert totals["malformed_lines"] == 2
    assert totals["qualified_rows"] == 2


def test_audit_is_read_only(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    _write(db, reduction(), reduction(rpc_id="2", provenance="historical"))
    os.utime(db, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    before_bytes, before_stat = db.read_bytes(), db.stat()
    audit_path(db)
    ledger_totals(db)
    read_ledger(db)
    with open_readonly(db) as conn:
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("DELETE FROM ledger_rows")
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("INSERT INTO ledger_schema (version) VALUES (9)")
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("PRAGMA user_version = 7")
    assert db.read_bytes() == before_bytes
    after = db.stat()
    assert after.st_mtime_ns == before_stat.st_mtime_ns
    assert after.st_size == before_stat.st_size
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.db"]  # no journal/WAL left


def test_unreadable_and_foreign_databases(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError) as missing:
        read_ledger(tmp_path / "absent.db")
    assert missing.value.reason == ReasonCode.NOT_FOUND
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(InvalidInputError) as not_db:
        read_ledger(junk)
    assert not_db.value.reason == ReasonCode.LEDGER_UNREADABLE
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(InvalidInputError) as foreign:
        read_ledger(other)
    assert foreign.value.reason == ReasonCode.LEDGER_UNREADABLE


def test_future_schema_version_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    _write(db, reduction())
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE ledger_schema SET version = 99")
    for action in (lambda: read_ledger(db), lambda: LedgerWriter(db)):
        with pytest.raises(InvalidInputError) as err:
            action()
        assert err.value.reason == ReasonCode.UNSUPPORTED_SCHEMA_VERSION
