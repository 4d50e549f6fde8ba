"""The run manifest: what a published run holds, written last (DESIGN 11).

A run in a store is ``runs/<run_id>/...`` plus ``runs/<run_id>/manifest.json``.
The manifest lists every object (key relative to the run, sha256, size) and the
run's provenance: code revision, price catalog version, redaction summary,
approval record (canary trials), kind, cohort count, trial verdict, the
study plan frozen when the run started (id, source, SHA-256) and the intervention the
treated arms ran (id, version, manifest SHA-256). A run
without a manifest, or whose manifest names an object the store does not hold,
is *incomplete* and is never pulled as complete.

Pure: models, (de)serialisation and the completeness rule; no I/O.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, ValidationError

from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.redaction import SecretPolicy
from pairlab.core.schemas.base import StrictModel
from pairlab.core.schemas.profile import InterventionStamp

MANIFEST_SCHEMA_VERSION = 1
MANIFEST_NAME = "manifest.json"
RUNS_PREFIX = "runs/"

RunKind = Literal["eval", "trial"]
RunStatus = Literal["complete", "incomplete"]

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_RUN_ID = re.compile(r"^[A-Za-z0-9._:-]{1,160}$")


# Raw provider-native client records collected from an episode (Claude transcripts,
# Codex rollouts, ...) hold prompts and model output: they are transcripts.
CLIENT_RECORDS_DIR = "collected"


def is_transcript_key(key: str) -> bool:
    """``episodes/<episode_id>/collected/...``: published only when the run asked for transcripts."""
    parts = key.split("/")
    return len(parts) >= 4 and parts[0] == "episodes" and parts[2] == CLIENT_RECORDS_DIR


def validate_run_id(run_id: str) -> str:
    if not _RUN_ID.match(run_id) or run_id in (".", ".."):
        raise InvalidInputError(
            f"invalid run id {run_id!r}: 1-160 characters of [A-Za-z0-9._:-]",
            reason=ReasonCode.INVALID_INPUT,
        )
    return run_id


def validate_object_key(key: str) -> str:
    """A relative POSIX key without ``..``, empty or absolute parts."""
    parts = key.split("/")
    if (
        not key
        or key.startswith("/")
        or "\\" in key
        or any(p in ("", ".", "..") for p in parts)
        or posixpath.normpath(key) != key
    ):
        raise InvalidInputError(f"invalid object key {key!r}", reason=ReasonCode.INVALID_INPUT)
    return key


def run_prefix(run_id: str) -> str:
    return f"{RUNS_PREFIX}{validate_run_id(run_id)}/"


def run_object_key(run_id: str, relative_key: str) -> str:
    return run_prefix(run_id) + validate_object_key(relative_key)


class ManifestObject(StrictModel):
    key: str = Field(min_length=1)
    sha256: str = Field(pattern=_SHA256.pattern)
    size: int = Field(ge=0)


class RedactionSummary(StrictModel):
    policy: SecretPolicy
    findings_by_kind: dict[str, int]
    objects_scanned: int = Field(ge=0)


class StudyPlanRecord(StrictModel):
    """The run's frozen study plan (``plan.json``): its id, origin and canonical SHA-256."""

    id: str
    source: str
    sha256: str = Field(pattern=_SHA256.pattern)
    path: str | None = None


class Manifest(StrictModel):
    schema_version: Literal[1] = 1
    run_id: str
    created_at: datetime
    kind: RunKind
    objects: list[ManifestObject]
    code_revision: str | None
    price_catalog_version: str | None
    catalog_version: str | None = None
    redaction: RedactionSummary
    approval: dict[str, Any] | None = None
    cohorts: int | None = None
    verdict: str | None = None
    study_plan: StudyPlanRecord | None = None
    # the run's intervention (issue 26): id, version, manifest sha256; None before issue 26
    intervention: InterventionStamp | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    def to_bytes(self) -> bytes:
        return (self.model_dump_json(indent=2) + "\n").encode("utf-8")

    def same_content(self, other: Manifest) -> bool:
        """Equal in everything but the publication time (re-publishing is a no-op)."""
        mine = self.model_dump(mode="json", exclude={"created_at"})
        theirs = other.model_dump(mode="json", exclude={"created_at"})
        return bool(mine == theirs)

    def object_map(self) -> dict[str, ManifestObject]:
        return {obj.key: obj for obj in self.objects}


def parse_manifest(data: bytes, source: str) -> Manifest:
    try:
        payload = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(
            f"{source}: manifest is not valid JSON", reason=ReasonCode.MALFORMED_INPUT
        ) from exc
    if not isinstance(payload, dict):
        raise InvalidInputError(
            f"{source}: manifest must be a JSON object", reason=ReasonCode.MALFORMED_INPUT
        )
    if payload.get("schema_version") != MANIFEST_SCHEMA_VERSION:
        raise InvalidInputError(
            f"{source}: unsupported manifest schema_version {payload.get('schema_version')!r}",
            reason=ReasonCode.UNSUPPORTED_SCHEMA_VERSION,
        )
    try:
        manifest = Manifest.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise InvalidInputError(
            f"{source}: invalid manifest: {loc}: {first['msg']}",
            reason=ReasonCode.MALFORMED_INPUT,
        ) from exc
    for obj in manifest.objects:
        validate_object_key(obj.key)
    return manifest


class RunListing(StrictModel):
    """One row of ``pairlab runs list``."""

    run_id: str
    status: RunStatus
    time: datetime | None
    kind: RunKind | None = None
    cohorts: int | None = None
    verdict: str | None = None
    objects: int
    missing_objects: list[str] = Field(default_factory=list)


def summarise_run(
    run_id: str,
    manifest: Manifest | None,
    present_keys: Iterable[str],
    latest_modified: datetime | None,
) -> RunListing:
    """Status of a run from its manifest (if any) and the relative keys the store holds."""
    present = set(present_keys) - {MANIFEST_NAME}
    if manifest is None:
        return RunListing(
            run_id=run_id, status="incomplete", time=latest_modified, objects=len(present)
        )
    missing = sorted(set(manifest.object_map()) - present)
    return RunListing(
        run_id=run_id,
        status="incomplete" if missing else "complete",
        time=manifest.created_at,
        kind=manifest.kind,
        cohorts=manifest.cohorts,
        verdict=manifest.verdict,
        objects=len(manifest.objects),
        missing_objects=missing,
    )


def merge_findings(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for count in counts:
        for kind, n in count.items():
            if n:
                total[kind] = total.get(kind, 0) + n
    return dict(sorted(total.items()))
