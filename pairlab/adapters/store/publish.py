"""Publishing a run directory to a store: redact, upload every object, manifest last.

``publish_run(run_dir, store, policy=...)`` is what the CLI (``pairlab publish``)
and the orchestration flow call. The steps, in order:

1. Scan every file of the run (transcripts included, when the run has them) and
   stage *redacted copies* in a temporary directory (``redacted_staging``); the run
   directory itself is never modified. With ``policy="refuse"`` any finding stops
   the publication before anything is uploaded (``PublishError``, reason
   ``SECRET_FOUND``, naming object and kind).
2. Build the manifest from the staged copies (sha256 and size of the bytes that
   are uploaded) and the run's provenance (read from the redacted copies;
   ``provenance``).
3. If the store already holds an identical manifest, stop: nothing to do.
   Otherwise remove a stale manifest first (the run is incomplete while it
   changes), upload every object whose remote sha256 differs, and write
   ``manifest.json`` last.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pairlab.adapters.store.base import Store
from pairlab.adapters.store.provenance import build_manifest, read_json_object
from pairlab.adapters.store.redacted_staging import finding_kinds, redact_value, stage_redacted
from pairlab.core.errors import InvalidInputError, PublishError, ReasonCode
from pairlab.core.redaction import SECRET_POLICIES, SecretPolicy
from pairlab.core.run_manifest import (
    MANIFEST_NAME,
    Manifest,
    ManifestObject,
    RedactionSummary,
    is_transcript_key,
    merge_findings,
    parse_manifest,
    run_object_key,
    validate_run_id,
)

_PARTIAL_SUFFIX = ".part"


@dataclass(frozen=True)
class PublishOutcome:
    manifest: Manifest
    uploaded: list[str]
    skipped: list[str]

    def to_json(self, url: str) -> dict[str, object]:
        return {
            "run_id": self.manifest.run_id,
            "url": url,
            "status": "complete",
            "objects": len(self.manifest.objects),
            "uploaded": len(self.uploaded),
            "skipped": len(self.skipped),
            "findings_by_kind": self.manifest.redaction.findings_by_kind,
            "policy": self.manifest.redaction.policy,
        }


def publish_run(
    run_dir: Path,
    store: Store,
    *,
    policy: SecretPolicy = "redact",
    extra_manifest: Mapping[str, Any] | None = None,
    include_transcripts: bool | None = None,
) -> Manifest:
    """Publish ``run_dir`` to ``store`` (see the module docstring); returns the manifest."""
    return publish_run_detailed(
        run_dir,
        store,
        policy=policy,
        extra_manifest=extra_manifest,
        include_transcripts=include_transcripts,
    ).manifest


def publish_run_detailed(
    run_dir: Path,
    store: Store,
    *,
    policy: SecretPolicy = "redact",
    extra_manifest: Mapping[str, Any] | None = None,
    run_id: str | None = None,
    on_upload: Callable[[str], None] | None = None,
    include_transcripts: bool | None = None,
) -> PublishOutcome:
    """``include_transcripts``: publish the episodes' raw client records
    (``episodes/*/collected/``); None = what the run itself asked for
    (``report.json`` ``meta.include_transcript``, default no). Withheld objects are
    counted in the manifest (``extra.withheld_transcript_objects``)."""
    if policy not in SECRET_POLICIES:
        raise InvalidInputError(
            f"unknown secret policy {policy!r}", reason=ReasonCode.INVALID_INPUT
        )
    if not run_dir.is_dir():
        raise InvalidInputError(f"{run_dir}: not a run directory", reason=ReasonCode.INVALID_INPUT)
    run_id = validate_run_id(run_id or run_dir.name)
    files = _run_files(run_dir)
    if include_transcripts is None:
        include_transcripts = _run_asked_for_transcripts(run_dir)
    if not include_transcripts:
        withheld = [k for k in files if is_transcript_key(k)]
        files = [k for k in files if not is_transcript_key(k)]
        extra_manifest = {**(extra_manifest or {}), "withheld_transcript_objects": len(withheld)}
    with tempfile.TemporaryDirectory(prefix="pairlab-publish-") as tmp:
        staging = Path(tmp)
        findings = stage_redacted(run_dir, files, staging, policy)
        extra, extra_findings = redact_value(dict(extra_manifest or {}))
        if policy == "refuse" and extra_findings.total():
            raise PublishError(
                f"refusing to publish {run_id}: the manifest metadata holds "
                f"{finding_kinds(extra_findings)}",
                reason=ReasonCode.SECRET_FOUND,
            )
        manifest = build_manifest(
            run_id,
            staging,
            files,
            RedactionSummary(
                policy=policy,
                findings_by_kind=merge_findings([*findings.values(), extra_findings]),
                objects_scanned=len(files),
            ),
            extra,
        )
        return _upload(store, manifest, staging, on_upload)


# --- the run's objects ---------------------------------------------------------


def _run_asked_for_transcripts(run_dir: Path) -> bool:
    meta = read_json_object(run_dir / "report.json").get("meta")
    return isinstance(meta, dict) and meta.get("include_transcript") is True


def _run_files(run_dir: Path) -> list[str]:
    keys: list[str] = []
    for path in sorted(run_dir.rglob("*")):
        if path.is_symlink():
            raise InvalidInputError(
                f"{path}: symbolic links are not published (copy the file into the run)",
                reason=ReasonCode.INVALID_INPUT,
            )
        if not path.is_file() or path.name.endswith(_PARTIAL_SUFFIX):
            continue
        key = path.relative_to(run_dir).as_posix()
        if key != MANIFEST_NAME:
            keys.append(key)
    return keys


# --- uploading -------------------------------------------------------------------


def _upload(
    store: Store,
    manifest: Manifest,
    staging: Path,
    on_upload: Callable[[str], None] | None,
) -> PublishOutcome:
    manifest_key = run_object_key(manifest.run_id, MANIFEST_NAME)
    remote_bytes = store.get_bytes(manifest_key)
    remote = _parse_remote(remote_bytes, manifest_key) if remote_bytes is not None else None
    present: dict[str, bool] | None = None  # each object checked once (a HEAD on S3)
    if remote is not None and remote.same_content(manifest):
        present = {
            obj.key: _matches(store, run_object_key(manifest.run_id, obj.key), obj)
            for obj in manifest.objects
        }
        if all(present.values()):
            return PublishOutcome(
                manifest=remote, uploaded=[], skipped=[o.key for o in manifest.objects]
            )
    if remote is not None:
        store.delete(manifest_key)  # the run is incomplete while its objects change
    uploaded: list[str] = []
    skipped: list[str] = []
    for obj in manifest.objects:
        key = run_object_key(manifest.run_id, obj.key)
        if present[obj.key] if present is not None else _matches(store, key, obj):
            skipped.append(obj.key)
            continue
        store.put_file(key, staging / obj.key, sha256=obj.sha256)
        uploaded.append(obj.key)
        if on_upload is not None:
            on_upload(obj.key)
    store.put_bytes(manifest_key, manifest.to_bytes())
    if on_upload is not None:
        on_upload(MANIFEST_NAME)
    return PublishOutcome(manifest=manifest, uploaded=uploaded, skipped=skipped)


def _parse_remote(data: bytes, key: str) -> Manifest | None:
    try:
        return parse_manifest(data, key)
    except InvalidInputError:
        return None  # unreadable: overwritten by this publication


def _matches(store: Store, key: str, obj: ManifestObject) -> bool:
    info = store.head(key)
    return info is not None and info.size == obj.size and info.sha256 == obj.sha256
