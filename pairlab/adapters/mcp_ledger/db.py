"""The per-episode MCP measurement ledger in SQLite (``<episode dir>/ledger.db``).

Writing: :class:`LedgerWriter` validates every row with the pure rules of
:mod:`pairlab.core.accounting.ledger_rules` and stores it -- rejected rows too,
with their reasons (nothing is lost), but only qualified rows ever count. The
retry identity ``(process_id, session_id, rpc_id, kind)`` has a unique index and
rows go in with ``INSERT OR IGNORE``: a retry is stored once and reported as
``duplicate`` (each ignored attempt is logged in ``duplicate_attempts``). Payload
text never reaches the database: a content-like field (or any long unknown
string) is replaced by its SHA-256 and byte length before storage.

Reading: :func:`open_readonly` opens the file through a ``file:...?mode=ro`` URI
with ``query_only`` on, so an audit cannot change a byte. Readers re-qualify
every stored row (see :mod:`pairlab.core.accounting.savings`): the stored
``qualified`` column is informational and cannot promote a row.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal
from urllib.parse import quote

from pairlab.core.accounting.ledger_rules import CONTENT_FIELDS, ROW_FIELDS, qualify_row
from pairlab.core.accounting.savings import StoredRow, ledger_totals_of
from pairlab.core.errors import InvalidInputError, ReasonCode

LEDGER_DB_SCHEMA_VERSION: Final = 1
LONG_UNKNOWN_STRING: Final = 256  # unknown string fields longer than this are fingerprinted

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS ledger_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_rows (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    process_id TEXT,
    session_id TEXT,
    rpc_id TEXT,
    kind TEXT,
    tool TEXT,
    provenance TEXT,
    recorded_at TEXT,
    returned_tokens INTEGER,
    saved_tokens INTEGER,
    expansion_ref TEXT,
    qualified INTEGER NOT NULL,
    reasons TEXT NOT NULL,
    row_json TEXT NOT NULL,
    stored_at TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS ledger_rows_identity
    ON ledger_rows (process_id, session_id, rpc_id, kind);
CREATE INDEX IF NOT EXISTS ledger_rows_expansion_ref ON ledger_rows (expansion_ref);
CREATE TABLE IF NOT EXISTS duplicate_attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    process_id TEXT, session_id TEXT, rpc_id TEXT, kind TEXT,
    identical INTEGER NOT NULL,
    attempted_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS malformed_lines (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source TEXT NOT NULL,
    line_no INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    reason TEXT NOT NULL,
    seen_at TEXT NOT NULL
);
"""

Status = Literal["stored", "duplicate"]


@dataclass(frozen=True)
class RecordOutcome:
    status: Status
    is_qualified: bool
    reasons: tuple[str, ...]

    def describe(self) -> str:
        if self.status == "duplicate":
            return "duplicate (same process/session/rpc/kind identity already stored; not counted again)"
        if self.is_qualified:
            return "stored (qualified)"
        return "stored (excluded: " + ", ".join(self.reasons) + ")"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "qualified": self.is_qualified,
            "excluded": self.status == "stored" and not self.is_qualified,
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True)
class IngestSummary:
    lines: int
    stored: int
    qualified: int
    excluded: int
    duplicates: int
    malformed: int


@dataclass(frozen=True)
class LedgerContents:
    rows: list[StoredRow]
    duplicate_attempts: int
    malformed_lines: int


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _fingerprint(value: object) -> dict[str, object]:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    data = text.encode("utf-8", errors="surrogatepass")
    return {"redacted": True, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def strip_contents(row: Mapping[str, object]) -> dict[str, object]:
    """The row as stored: payload-like fields replaced by their fingerprint, nothing else changed."""
    out: dict[str, object] = {}
    for key, value in row.items():
        is_content = key in CONTENT_FIELDS
        is_long_unknown = (
            key not in ROW_FIELDS and isinstance(value, str) and len(value) > LONG_UNKNOWN_STRING
        )
        out[key] = _fingerprint(value) if (is_content or is_long_unknown) else value
    return out


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _connect_rw(path: Path) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=30)
        conn.executescript(_SCHEMA)
        version = conn.execute("SELECT version FROM ledger_schema").fetchall()
        if not version:
            conn.execute(
                "INSERT INTO ledger_schema (version) VALUES (?)", (LEDGER_DB_SCHEMA_VERSION,)
            )
            conn.commit()
        elif version[0][0] != LEDGER_DB_SCHEMA_VERSION:
            conn.close()
            raise InvalidInputError(
                f"{path}: ledger schema version {version[0][0]} is not {LEDGER_DB_SCHEMA_VERSION}",
                reason=ReasonCode.UNSUPPORTED_SCHEMA_VERSION,
            )
    except sqlite3.Error as exc:
        raise InvalidInputError(
            f"{path}: cannot open ledger: {exc}", reason=ReasonCode.LEDGER_UNREADABLE
        ) from exc
    return conn


class LedgerWriter:
    """Append rows to one ledger database through the qualification rules."""

    def __init__(self, db: Path | str) -> None:
        self.path = Path(db)
        self._conn = _connect_rw(self.path)

    def __enter__(self) -> LedgerWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._conn.close()

    def record(self, row: Mapping[str, object], *, commit: bool = True) -> RecordOutcome:
        """Validate and store one row; a repeated identity is not stored again (``duplicate``)."""
        verdict = qualify_row(row)
        reasons = tuple(str(r) for r in verdict.reasons)
        stored = strip_contents(row)
        row_json = json.dumps(stored, sort_keys=True)
        identity = tuple(
            _text_or_none(row.get(k)) for k in ("process_id", "session_id", "rpc_id", "kind")
        )
        cursor = self._conn.execute(
            "INSERT OR IGNORE INTO ledger_rows (process_id, session_id, rpc_id, kind, tool, provenance,"
            " recorded_at, returned_tokens, saved_tokens, expansion_ref, qualified, reasons, row_json,"
            " stored_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                *identity,
                _text_or_none(row.get("tool")),
                _text_or_none(row.get("provenance")),
                _text_or_none(row.get("recorded_at")),
                _int_or_none(row.get("returned_tokens")),
                _int_or_none(row.get("saved_tokens")),
                _text_or_none(row.get("expansion_ref")),
                int(verdict.is_qualified),
                json.dumps(reasons),
                row_json,
                _now(),
            ),
        )
        if cursor.rowcount == 0:
            first = self._conn.execute(
                "SELECT row_json FROM ledger_rows WHERE process_id IS ? AND session_id IS ?"
                " AND rpc_id IS ? AND kind IS ?",
                identity,
            ).fetchone()
            self._conn.execute(
                "INSERT INTO duplicate_attempts (process_id, session_id, rpc_id, kind, identical,"
                " attempted_at) VALUES (?, ?, ?, ?, ?, ?)",
                (*identity, int(first is not None and first[0] == row_json), _now()),
            )
            outcome = RecordOutcome("duplicate", verdict.is_qualified, reasons)
        else:
            outcome = RecordOutcome("stored", verdict.is_qualified, reasons)
        if commit:
            self._conn.commit()
        return outcome

    def record_malformed(self, source: str, line_no: int, line: bytes, reason: str) -> None:
        self._conn.execute(
            "INSERT INTO malformed_lines (source, line_no, sha256, bytes, reason, seen_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (source, line_no, hashlib.sha256(line).hexdigest(), len(line), reason, _now()),
        )

    def commit(self) -> None:
        self._conn.commit()


def ingest_jsonl(jsonl: Path, db: Path) -> IngestSummary:
    """Append every line of a ledger JSONL file (e.g. ``$STATE/mcp-ledger.jsonl``) to ``db``.

    Lines that are not JSON objects are logged (fingerprint only) in
    ``malformed_lines``; empty lines are skipped. One transaction for the file.
    """
    try:
        data = jsonl.read_bytes()
    except OSError as exc:
        raise InvalidInputError(
            f"cannot read {jsonl}: {exc}", reason=ReasonCode.INPUT_READ_FAILED
        ) from exc
    counts = {
        "lines": 0,
        "stored": 0,
        "qualified": 0,
        "excluded": 0,
        "duplicates": 0,
        "malformed": 0,
    }
    with LedgerWriter(db) as writer:
        for line_no, raw in enumerate(data.splitlines(), start=1):
            if not raw.strip():
                continue
            counts["lines"] += 1
            try:
                row = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                writer.record_malformed(str(jsonl), line_no, raw, "malformed-json")
                counts["malformed"] += 1
                continue
            if not isinstance(row, dict):
                writer.record_malformed(str(jsonl), line_no, raw, "not-an-object")
                counts["malformed"] += 1
                continue
            outcome = writer.record(row, commit=False)
            if outcome.status == "duplicate":
                counts["duplicates"] += 1
            else:
                counts["stored"] += 1
                counts["qualified" if outcome.is_qualified else "excluded"] += 1
        writer.commit()
    return IngestSummary(**counts)


def readonly_uri(path: Path) -> str:
    return "file:" + quote(str(path.resolve())) + "?mode=ro"


@contextmanager
def open_readonly(path: Path | str) -> Iterator[sqlite3.Connection]:
    """A connection that cannot write: ``mode=ro`` URI plus ``PRAGMA query_only``."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"no ledger database at {path}", reason=ReasonCode.NOT_FOUND)
    try:
        conn = sqlite3.connect(readonly_uri(path), uri=True)
    except sqlite3.Error as exc:
        raise InvalidInputError(
            f"{path}: cannot open ledger: {exc}", reason=ReasonCode.LEDGER_UNREADABLE
        ) from exc
    with closing(conn):
        conn.execute("PRAGMA query_only = ON")
        yield conn


def read_ledger(path: Path | str) -> LedgerContents:
    """Every stored row of a ledger (read-only), with the counts of ignored retries and bad lines."""
    with open_readonly(path) as conn:
        try:
            version = conn.execute("SELECT version FROM ledger_schema").fetchone()
            if version is None or version[0] != LEDGER_DB_SCHEMA_VERSION:
                raise InvalidInputError(
                    f"{path}: ledger schema version {version and version[0]} is not "
                    f"{LEDGER_DB_SCHEMA_VERSION}",
                    reason=ReasonCode.UNSUPPORTED_SCHEMA_VERSION,
                )
            rows = [
                StoredRow(json.loads(row_json), bool(qualified))
                for row_json, qualified in conn.execute(
                    "SELECT row_json, qualified FROM ledger_rows ORDER BY id"
                )
            ]
            duplicates = conn.execute("SELECT count(*) FROM duplicate_attempts").fetchone()[0]
            malformed = conn.execute("SELECT count(*) FROM malformed_lines").fetchone()[0]
        except sqlite3.Error as exc:
            raise InvalidInputError(
                f"{path}: not a pairlab ledger: {exc}", reason=ReasonCode.LEDGER_UNREADABLE
            ) from exc
    return LedgerContents(rows, int(duplicates), int(malformed))


def ledger_totals(db: Path | str) -> dict[str, int | None]:
    """The episode record's ``ledger`` field: four quantities (None when nothing qualified) + counts."""
    contents = read_ledger(db)
    totals = ledger_totals_of(contents.rows)
    totals["duplicate_retries_ignored"] = contents.duplicate_attempts
    totals["malformed_lines"] = contents.malformed_lines
    return totals
