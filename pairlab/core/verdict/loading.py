"""From a path or bytes to a decoded :class:`Artifact`, or the one reason why not.

As loom does it (LOOM-ARTIFACT §2, whole-artifact failures 2-4): a file that
cannot be opened or read → ``input-read-failed``; more than 16 MiB →
``input-too-large`` (from the size, before a byte is parsed); anything that
does not decode into the schema (not UTF-8, not JSON, ``NaN``, an unknown,
missing or repeated field, a wrong type, an out-of-range integer, a bad enum
value) → ``malformed-input``; then, and only then, ``schema_version`` ≠ 1 →
``unsupported-schema-version``. Never raises. The problem locations (never
the offending values) are kept for ``--explain``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from pairlab.core.verdict.artifact import (
    MAX_ARTIFACT_BYTES,
    SCHEMA_VERSION,
    Artifact,
    DuplicateKeys,
)
from pairlab.core.verdict.reasons import VerdictReason

MAX_PROBLEMS: Final = 20


@dataclass(frozen=True)
class Problem:
    """Where the input failed to decode, and how (no input value is ever quoted)."""

    where: str
    what: str


@dataclass(frozen=True)
class LoadResult:
    artifact: Artifact | None
    reason: VerdictReason | None = None
    problems: tuple[Problem, ...] = ()


def read_artifact_file(path: Path) -> bytes | VerdictReason:
    """The file's bytes, or why they cannot be judged (the size is checked before reading)."""
    try:
        with Path(path).open("rb") as handle:
            if os.fstat(handle.fileno()).st_size > MAX_ARTIFACT_BYTES:
                return VerdictReason.INPUT_TOO_LARGE
            data = handle.read(MAX_ARTIFACT_BYTES + 1)
    except OSError:
        return VerdictReason.INPUT_READ_FAILED
    if len(data) > MAX_ARTIFACT_BYTES:  # grew after the size check, or not a regular file
        return VerdictReason.INPUT_TOO_LARGE
    return data


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    decoded = dict(pairs)
    return decoded if len(decoded) == len(pairs) else DuplicateKeys(decoded)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("number out of range")
    return value


def _malformed(*problems: Problem) -> LoadResult:
    return LoadResult(None, VerdictReason.MALFORMED_INPUT, problems[:MAX_PROBLEMS])


def load_artifact(data: bytes) -> LoadResult:
    if len(data) > MAX_ARTIFACT_BYTES:
        return LoadResult(None, VerdictReason.INPUT_TOO_LARGE)
    try:
        document = json.loads(
            data.decode("utf-8"),
            object_pairs_hook=_object,
            parse_constant=_no_constant,
            parse_float=_finite,
        )
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        return _malformed(Problem("", f"not a UTF-8 JSON document ({type(exc).__name__})"))
    try:
        artifact = Artifact.model_validate(document)
    except ValidationError as exc:
        return _malformed(
            *(
                Problem((".".join(str(p) for p in err["loc"]) or "<document>")[:200], err["msg"])
                for err in exc.errors(include_url=False, include_input=False)
            )
        )
    except (ValueError, RecursionError):
        return _malformed(Problem("", "the document could not be decoded"))
    if artifact.schema_version != SCHEMA_VERSION:
        return LoadResult(
            None,
            VerdictReason.UNSUPPORTED_SCHEMA_VERSION,
            (Problem("schema_version", f"version {artifact.schema_version}; only 1 is known"),),
        )
    return LoadResult(artifact)
