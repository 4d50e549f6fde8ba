"""A run's redacted staging copy: every object scanned, redacted where it can be.

Text is redacted in place; Parquet string cells are redacted and the file rebuilt
(its footer -- column names, key-value metadata -- byte-scanned as well); a PNG's
text chunks are scanned; any other binary object is only scanned, and refused if it
holds a finding (it cannot be rewritten safely). With ``policy="refuse"`` any finding
refuses. A refusal raises ``PublishError`` (reason ``SECRET_FOUND``) naming object
and kind, before anything is uploaded. The run directory itself is never modified.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from pairlab.core.errors import PublishError, ReasonCode
from pairlab.core.redaction import (
    ObjectRedaction,
    SecretPolicy,
    png_text,
    redact_bytes,
    redact_text,
)


def stage_redacted(
    run_dir: Path, keys: list[str], staging: Path, policy: SecretPolicy
) -> dict[str, Counter[str]]:
    """Write the redacted copy of every ``keys`` object of ``run_dir`` under ``staging``;
    returns the findings by object (refuses as the module docstring says)."""
    findings: dict[str, Counter[str]] = {}
    refused: list[str] = []
    for key in keys:
        source = run_dir / key
        result = redact_object(key, source.read_bytes())
        if result.findings.total():
            findings[key] = result.findings
            if result.is_refused_binary or policy == "refuse":
                refused.append(key)
        target = staging / key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(result.data)
    if refused:
        detail = "; ".join(f"{key}: {finding_kinds(findings[key])}" for key in refused[:10])
        more = f" (and {len(refused) - 10} more)" if len(refused) > 10 else ""
        why = (
            "policy is refuse"
            if policy == "refuse"
            else "binary objects cannot be rewritten safely"
        )
        raise PublishError(
            f"refusing to publish: secrets or personal data found ({why}); "
            f"nothing was uploaded: {detail}{more}",
            reason=ReasonCode.SECRET_FOUND,
        )
    return findings


def finding_kinds(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{kind} x{n}" for kind, n in sorted(counts.items()) if n)


def redact_object(key: str, data: bytes) -> ObjectRedaction:
    if key.endswith(".parquet"):
        return _redact_parquet(data)
    if key.endswith(".png") and (text := png_text(data)) is not None:
        # Only a PNG's text chunks can hold text; compressed pixels match patterns by chance.
        scanned = redact_bytes(text)
        return ObjectRedaction(data=data, findings=scanned.findings, is_text=False)
    return redact_bytes(data)


def _redact_parquet(data: bytes) -> ObjectRedaction:
    """Redact the string cells of a Parquet file and rebuild it when anything was found.

    Compressed pages hide strings from a byte scan, so the cells are read. The
    rebuilt (or untouched) file is then byte-scanned as well, for what lives
    outside the cells (schema metadata): a finding there refuses the object.
    """
    try:
        frame = pl.read_parquet(io.BytesIO(data))
    except (pl.exceptions.PolarsError, OSError):
        return redact_bytes(data)  # not readable as Parquet: treated as opaque binary
    rows, cell_findings = redact_value(frame.to_dicts())
    if cell_findings.total():
        buffer = io.BytesIO()
        pl.from_dicts(rows, schema=frame.schema).write_parquet(buffer)
        data = buffer.getvalue()
    # Outside the cells only the footer holds text (column names, key-value metadata);
    # compressed pages are not scanned as bytes (noise matches patterns by chance).
    outside = redact_bytes(_parquet_footer_text(data))
    return ObjectRedaction(
        data=data,
        findings=cell_findings + outside.findings,
        is_text=not outside.findings.total(),
    )


def _parquet_footer_text(data: bytes) -> bytes:
    meta = pq.read_metadata(io.BytesIO(data))
    parts = [name.encode("utf-8") for name in meta.schema.names]
    for key, value in (meta.metadata or {}).items():
        parts += [key, value]
    return b"\n".join(parts)


def redact_value(value: Any) -> tuple[Any, Counter[str]]:
    """Redact every string inside a JSON-like value (dicts, lists, strings)."""
    findings: Counter[str] = Counter()

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            result = redact_text(item)
            findings.update(result.findings)
            return result.text
        if isinstance(item, dict):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(v) for v in item]
        return item

    return walk(value), findings


__all__ = ["finding_kinds", "redact_object", "redact_value", "stage_redacted"]
