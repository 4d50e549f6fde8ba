"""From bytes to a validated :class:`Artifact`, or the reason codes why not.

Never raises: oversize input, undecodable JSON, a wrong schema version and every
pydantic validation failure become reason codes (and a short list of problem
locations, without the offending values, so nothing from the input leaks into
a report).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from pairlab.core.verdict.artifact import MAX_ARTIFACT_BYTES, MAX_PAIRS, Artifact
from pairlab.core.verdict.reasons import VerdictReason

MAX_PROBLEMS: Final = 20

_CUSTOM_TYPES: Final = {
    "invalid_identifier": VerdictReason.INVALID_IDENTIFIER,
    "invalid_intervention_manifest": VerdictReason.INVALID_INTERVENTION_MANIFEST,
    "invalid_quota_observation": VerdictReason.INVALID_QUOTA_OBSERVATION,
}


@dataclass(frozen=True)
class Problem:
    where: str
    reason: VerdictReason

    def to_json(self) -> dict[str, str]:
        return {"where": self.where, "reason_code": str(self.reason)}


@dataclass(frozen=True)
class LoadResult:
    artifact: Artifact | None
    reasons: frozenset[VerdictReason] = field(default_factory=frozenset)
    problems: tuple[Problem, ...] = ()


def _refused(reason: VerdictReason, where: str = "") -> LoadResult:
    return LoadResult(None, frozenset({reason}), (Problem(where, reason),))


def _inside_item(loc: Sequence[int | str], name: str) -> bool:
    """True when ``loc`` points inside one element of a list called ``name``."""
    for i, part in enumerate(loc):
        if part == name:
            return len(loc) > i + 2 or (len(loc) == i + 2 and isinstance(loc[i + 1], int))
    return False


def reason_for_error(error: ErrorDetails) -> VerdictReason:
    """Map one pydantic error to its reason code (first match wins)."""
    kind = error["type"]
    loc = error["loc"]
    if kind == "invalid_identifier":
        return VerdictReason.INVALID_IDENTIFIER
    if loc and loc[0] == "intervention":
        return VerdictReason.INVALID_INTERVENTION_MANIFEST
    if kind == "too_long":
        return (
            VerdictReason.PAIR_LIMIT_EXCEEDED
            if tuple(loc) == ("pairs",)
            else VerdictReason.EVIDENCE_LIMIT_EXCEEDED
        )
    if kind in _CUSTOM_TYPES:
        return _CUSTOM_TYPES[kind]
    if _inside_item(loc, "token_vectors"):
        return VerdictReason.INVALID_TOKEN_VECTOR
    if _inside_item(loc, "quota_intervals"):
        return VerdictReason.INVALID_QUOTA_OBSERVATION
    return VerdictReason.MALFORMED_INPUT


def _schema_version_reason(document: Any) -> VerdictReason | None:
    if not isinstance(document, dict) or "schema_version" not in document:
        return VerdictReason.MALFORMED_INPUT
    version = document["schema_version"]
    if type(version) is not int or version != 1:
        return VerdictReason.UNSUPPORTED_SCHEMA_VERSION
    pairs = document.get("pairs")
    if isinstance(pairs, list) and len(pairs) > MAX_PAIRS:
        return VerdictReason.PAIR_LIMIT_EXCEEDED
    return None


def load_artifact(data: bytes) -> LoadResult:
    if len(data) > MAX_ARTIFACT_BYTES:
        return _refused(VerdictReason.INPUT_TOO_LARGE)
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return _refused(VerdictReason.MALFORMED_INPUT)
    early = _schema_version_reason(document)
    if early is not None:
        where = "" if early is VerdictReason.MALFORMED_INPUT else "schema_version"
        return _refused(early, "pairs" if early is VerdictReason.PAIR_LIMIT_EXCEEDED else where)
    try:
        artifact = Artifact.model_validate_json(data)
    except ValidationError as exc:
        problems = [
            Problem(".".join(str(p) for p in err["loc"]), reason_for_error(err))
            for err in exc.errors(include_url=False, include_input=False)
        ]
        return LoadResult(
            None, frozenset(p.reason for p in problems), tuple(problems[:MAX_PROBLEMS])
        )
    except (ValueError, RecursionError):
        return _refused(VerdictReason.MALFORMED_INPUT)
    return LoadResult(artifact)
