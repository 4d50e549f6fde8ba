"""What every usage reader shares: the report model, provenance labels, streaming.

A reader turns the provider-native records of ONE episode (one or many files)
into a :class:`UsageReport`. Files are streamed line by line (``.zst`` through a
zstandard stream reader), so memory grows with the number of distinct API calls,
never with file size. A line that cannot be read is counted under
``malformed-line`` and the reader carries on; a file that cannot be opened is
counted under ``unreadable-file``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Final, Protocol

from pydantic import Field

from pairlab.core.schemas.base import StrictModel
from pairlab.core.schemas.quota import QuotaObservation
from pairlab.core.schemas.usage import UsageVector

# Provenance labels (record classes). Only ``measured`` records enter the vector.
MEASURED: Final = "measured"
DUPLICATE: Final = "duplicate"
SYNTHETIC_ERROR: Final = "synthetic-error"
UNKNOWN_USAGE: Final = "unknown-usage"
TOOL_RESULT_COPY: Final = "tool-result-copy"
REPLAY: Final = "replay"
RESET: Final = "reset"
NO_DEDUPE_KEY: Final = "no-dedupe-key"
SUMMARY: Final = "summary"
SUMMARY_SUPERSEDED: Final = "summary-superseded"
AGGREGATE_SPAN: Final = "aggregate-span"
WEAK_ZERO: Final = "weak-zero"
MALFORMED_LINE: Final = "malformed-line"
UNREADABLE_FILE: Final = "unreadable-file"
DUPLICATE_FILE: Final = "duplicate-file"

# Always present in a report, so a zero count is an explicit statement.
BASE_LABELS: Final = (MEASURED, DUPLICATE, SYNTHETIC_ERROR, UNKNOWN_USAGE)

MAX_ISSUES: Final = 50
# Whole-document formats (Gemini) are parsed at once; refuse anything larger.
MAX_DOCUMENT_BYTES: Final = 256 * 1024 * 1024
USAGE_SUFFIXES: Final = (".jsonl", ".json", ".jsonl.zst", ".json.zst", ".zst")


class ModelUsage(StrictModel):
    api_calls: int | None = Field(default=None, ge=0)
    vector: UsageVector = Field(default_factory=UsageVector)


class UsageReport(StrictModel):
    """One episode's normalised usage: the JSON shape of ``pairlab usage --json``."""

    provider: str
    vector: UsageVector
    api_calls: int | None = Field(default=None, ge=0)
    by_model: dict[str, ModelUsage] = Field(default_factory=dict)
    sidechain_vector: UsageVector = Field(default_factory=UsageVector)
    cli_version: str | None = None
    session_id: str | None = None
    web_search_requests: int | None = Field(default=None, ge=0)
    provider_reported_cost_usd: float | None = Field(default=None, ge=0)
    quota_observations: list[QuotaObservation] = Field(default_factory=list)
    provenance: dict[str, int] = Field(default_factory=dict)
    paths: list[str] = Field(default_factory=list)
    issues: list[str] = Field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class UsageReader(Protocol):
    """Reads the records of one episode into a report."""

    provider: str

    def read(self, paths: Sequence[Path]) -> UsageReport: ...


def vector_of(**dims: int | None) -> UsageVector:
    """A vector from raw dimension values; negative values are clamped to None."""
    clean = {k: (v if v is None or v >= 0 else None) for k, v in dims.items()}
    return UsageVector(**clean)


def int_or_none(value: object) -> int | None:
    """An int token count from a JSON value; bools, floats with fraction, text -> None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def sub_nullable(a: int | None, b: int | None) -> int | None:
    """a - b where b may be missing (treated as nothing to subtract)."""
    if a is None:
        return None
    return a - (b or 0)


def parse_time(value: object) -> datetime | None:
    """ISO-8601 text or epoch seconds -> aware UTC datetime; anything else -> None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value:
        text = value[:-1] + "+00:00" if value.endswith("Z") else value
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def parse_instant(value: object) -> datetime | None:
    """An absolute instant: epoch seconds, or ISO-8601 text that states its offset (``Z``,
    ``+02:00``). Text without an offset is not an instant (its zone is not stated): None.

    Quota sources use it for reset times, so a reset the source left zone-less is
    unknown, never guessed as UTC (DESIGN 5.4: ``resets_at`` is absolute)."""
    if isinstance(value, str) and value:
        text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
        return parsed if parsed.tzinfo else None
    return parse_time(value)


@dataclass
class ModelTally:
    api_calls: int = 0
    vector: UsageVector = field(default_factory=UsageVector)


@dataclass
class ReportBuilder:
    """Mutable accumulator a reader fills; ``build()`` freezes it into a report."""

    provider: str
    vector: UsageVector = field(default_factory=UsageVector)
    api_calls: int | None = None
    by_model: dict[str, ModelTally] = field(default_factory=dict)
    sidechain_vector: UsageVector = field(default_factory=UsageVector)
    cli_version: str | None = None
    session_id: str | None = None
    web_search_requests: int | None = None
    cost_usd: float | None = None
    quota: list[QuotaObservation] = field(default_factory=list)
    provenance: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BASE_LABELS, 0))
    paths: list[str] = field(default_factory=list)
    issues: list[str] = field(default_factory=list)
    _quota_state: dict[tuple[str, str], tuple[object, ...]] = field(default_factory=dict)

    def count(self, label: str, n: int = 1) -> None:
        self.provenance[label] = self.provenance.get(label, 0) + n

    def note(self, message: str) -> None:
        if len(self.issues) < MAX_ISSUES:
            self.issues.append(message)

    def add_call(
        self, model: str, vector: UsageVector, *, is_sidechain: bool, calls: int | None = 1
    ) -> None:
        """Add one measured API call (or a summary with ``calls=None``)."""
        self.vector = self.vector + vector
        tally = self.by_model.setdefault(model, ModelTally())
        tally.vector = tally.vector + vector
        if calls is not None:
            tally.api_calls += calls
            self.api_calls = (self.api_calls or 0) + calls
        if is_sidechain:
            self.sidechain_vector = self.sidechain_vector + vector

    def add_quota(self, observations: Iterable[QuotaObservation]) -> None:
        """Keep an observation only when its window's state changed (bounded memory)."""
        for obs in observations:
            key = (obs.provider, obs.window)
            state = (obs.used_percent, obs.resets_at, obs.source)
            if self._quota_state.get(key) == state:
                continue
            self._quota_state[key] = state
            self.quota.append(obs)

    def add_web_searches(self, n: int | None) -> None:
        if n is not None:
            self.web_search_requests = (self.web_search_requests or 0) + n

    def add_cost(self, usd: float | None) -> None:
        if usd is not None and usd >= 0:
            self.cost_usd = (self.cost_usd or 0.0) + usd

    def build(self) -> UsageReport:
        return UsageReport(
            provider=self.provider,
            vector=self.vector,
            api_calls=self.api_calls,
            by_model={
                m: ModelUsage(
                    api_calls=t.api_calls if self.api_calls is not None else None, vector=t.vector
                )
                for m, t in sorted(self.by_model.items())
            },
            sidechain_vector=self.sidechain_vector,
            cli_version=self.cli_version,
            session_id=self.session_id,
            web_search_requests=self.web_search_requests,
            provider_reported_cost_usd=(
                round(self.cost_usd, 10) if self.cost_usd is not None else None
            ),
            quota_observations=list(self.quota),  # add_quota kept state changes only
            provenance=dict(self.provenance),
            paths=list(self.paths),
            issues=list(self.issues),
        )


def expand_paths(paths: Sequence[Path]) -> list[Path]:
    """Files as given; directories scanned recursively for usage files, sorted."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = [f for f in p.rglob("*") if f.is_file() and f.name.endswith(USAGE_SUFFIXES)]
            out.extend(sorted(found))
        else:
            out.append(p)
    seen: set[Path] = set()
    unique: list[Path] = []
    for p in out:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


def open_text(path: Path) -> IO[str]:
    """Open a whole text file (``.zst`` decompressed as a stream) for document parsing."""
    if path.name.endswith(".zst"):
        import zstandard

        raw = path.open("rb")
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)
        except Exception:
            raw.close()
            raise
        return io.TextIOWrapper(reader, encoding="utf-8", errors="replace")
    return path.open("r", encoding="utf-8", errors="replace")


class TruncatedStreamError(EOFError):
    """A compressed stream ended inside a frame."""


def _zst_lines(path: Path, chunk_bytes: int = 1 << 20) -> Iterator[str]:
    """Lines of a zstd file, frame by frame; a truncated last frame raises at the end."""
    import zstandard

    dctx = zstandard.ZstdDecompressor()
    dobj = dctx.decompressobj()
    fed = False
    pending = b""
    with path.open("rb") as raw:
        while chunk := raw.read(chunk_bytes):
            data, parts = chunk, []
            while data:
                fed = True
                parts.append(dobj.decompress(data))
                if dobj.eof:  # next frame (multi-frame files) starts in unused_data
                    data = dobj.unused_data
                    dobj, fed = dctx.decompressobj(), False
                else:
                    data = b""
            pending += b"".join(parts)
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line.decode("utf-8", errors="replace")
    if pending:
        yield pending.decode("utf-8", errors="replace")
    if fed and not dobj.eof:
        raise TruncatedStreamError(f"{path}: zstd stream ends inside a frame")


def iter_lines(path: Path) -> Iterator[str]:
    """Text lines of a plain or ``.zst`` file, streamed."""
    if path.name.endswith(".zst"):
        yield from _zst_lines(path)
        return
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        yield from handle


def iter_json_lines(
    path: Path, builder: ReportBuilder, needles: tuple[str, ...] | None = None
) -> Iterator[dict[str, Any]]:
    """Yield each JSON-object line of a file; count bad lines and unreadable files.

    With ``needles``, a line containing none of them cannot carry what the reader
    wants (the bulk of a transcript is message text) and is skipped unparsed; it
    is still counted as malformed when it is visibly not one JSON object (a torn
    or truncated line does not end in ``}``).
    """
    line_no = 0
    try:
        for line in iter_lines(path):
            line_no += 1
            if needles is not None and not any(n in line for n in needles):
                shape = line.strip()
                if shape and not (shape[0] == "{" and shape[-1] == "}"):
                    builder.count(MALFORMED_LINE)
                    builder.note(f"{path}:{line_no}: malformed JSON line")
                continue
            text = line.strip()
            if not text:
                continue
            try:
                obj = json.loads(text)
            except ValueError:
                builder.count(MALFORMED_LINE)
                builder.note(f"{path}:{line_no}: malformed JSON line")
                continue
            if not isinstance(obj, dict):
                builder.count(MALFORMED_LINE)
                builder.note(f"{path}:{line_no}: not a JSON object")
                continue
            yield obj
    except Exception as exc:  # OSError, truncated stream, zstandard.ZstdError
        builder.count(UNREADABLE_FILE)
        builder.note(f"{path}:{line_no}: read failed ({exc.__class__.__name__})")


def load_document(path: Path, builder: ReportBuilder) -> object | None:
    """Parse a whole-document JSON file (bounded size); None when it cannot be read."""
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            builder.count(UNREADABLE_FILE)
            builder.note(f"{path}: {size} bytes exceeds the document limit")
            return None
        with open_text(path) as handle:
            doc: object = json.load(handle)
        return doc
    except ValueError:
        builder.count(MALFORMED_LINE)
        builder.note(f"{path}: malformed JSON document")
        return None
    except Exception as exc:
        builder.count(UNREADABLE_FILE)
        builder.note(f"{path}: unreadable ({exc.__class__.__name__})")
        return None
