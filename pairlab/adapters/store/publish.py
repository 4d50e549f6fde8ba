"""Publishing a run directory to a store: redact, upload every object, manifest last.

``publish_run(run_dir, store, policy=...)`` is what the CLI (``pairlab publish``)
and the orchestration flow call. The steps, in order:

1. Scan every file of the run (transcripts included, when the run has them) and
   stage *redacted copies* in a temporary directory; the run directory itself is
   never modified. Text is redacted in place, Parquet string cells are redacted
   and the file rebuilt, any other binary object is only scanned and refused if
   it holds a finding (it cannot be rewritten safely). With ``policy="refuse"``
   any finding stops the publication before anything is uploaded
   (``PublishError``, reason ``SECRET_FOUND``, naming object and kind).
2. Build the manifest from the staged copies (sha256 and size of the bytes that
   are uploaded) and the run's provenance (read from the redacted copies).
3. If the store already holds an identical manifest, stop: nothing to do.
   Otherwise remove a stale manifest first (the run is incomplete while it
   changes), upload every object whose remote sha256 differs, and write
   ``manifest.json`` last.
"""

from __future__ import annotations

import importlib.metadata
import io
import json
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from pairlab.adapters.store.base import Store, sha256_file
from pairlab.core.analysis.study_plan import FROZEN_PLAN_NAME
from pairlab.core.errors import InvalidInputError, PublishError, ReasonCode
from pairlab.core.redaction import (
    SECRET_POLICIES,
    ObjectRedaction,
    SecretPolicy,
    png_text,
    redact_bytes,
    redact_text,
)
from pairlab.core.run_manifest import (
    MANIFEST_NAME,
    Manifest,
    ManifestObject,
    RedactionSummary,
    RunKind,
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
        findings = _stage_redacted(run_dir, files, staging, policy)
        extra, extra_findings = _redact_value(dict(extra_manifest or {}))
        if policy == "refuse" and extra_findings.total():
            raise PublishError(
                f"refusing to publish {run_id}: the manifest metadata holds "
                f"{_kinds(extra_findings)}",
                reason=ReasonCode.SECRET_FOUND,
            )
        manifest = _build_manifest(
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


# --- scanning and staging -----------------------------------------------------


def _run_asked_for_transcripts(run_dir: Path) -> bool:
    meta = _read_json_object(run_dir / "report.json").get("meta")
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


def _stage_redacted(
    run_dir: Path, keys: list[str], staging: Path, policy: SecretPolicy
) -> dict[str, Counter[str]]:
    findings: dict[str, Counter[str]] = {}
    refused: list[str] = []
    for key in keys:
        source = run_dir / key
        result = _redact_object(key, source.read_bytes())
        if result.findings.total():
            findings[key] = result.findings
            if result.is_refused_binary or policy == "refuse":
                refused.append(key)
        target = staging / key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(result.data)
    if refused:
        detail = "; ".join(f"{key}: {_kinds(findings[key])}" for key in refused[:10])
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


def _kinds(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{kind} x{n}" for kind, n in sorted(counts.items()) if n)


def _redact_object(key: str, data: bytes) -> ObjectRedaction:
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
    rows, cell_findings = _redact_value(frame.to_dicts())
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


def _redact_value(value: Any) -> tuple[Any, Counter[str]]:
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


# --- the manifest --------------------------------------------------------------


def _build_manifest(
    run_id: str,
    staging: Path,
    keys: list[str],
    redaction: RedactionSummary,
    extra: dict[str, Any],
) -> Manifest:
    report = _read_json_object(staging / "report.json")
    objects = [
        ManifestObject(
            key=key, sha256=sha256_file(staging / key), size=(staging / key).stat().st_size
        )
        for key in keys
    ]
    kind: RunKind = (
        report["kind"]
        if report.get("kind") in ("eval", "trial")
        else ("trial" if (staging / "trials").is_dir() else "eval")
    )
    fields: dict[str, Any] = {
        "run_id": run_id,
        "created_at": datetime.now(UTC),
        "kind": kind,
        "objects": objects,
        "code_revision": _str_or_none(report.get("code_revision")) or code_revision(),
        "price_catalog_version": _price_catalog_version(staging, report),
        "catalog_version": _str_or_none(report.get("catalog_version")),
        "redaction": redaction,
        "approval": _read_json_object(staging / "trials" / "approval.json") or None,
        "cohorts": _cohort_count(report),
        "verdict": _verdict(staging, report) if kind == "trial" else None,
        "study_plan": _study_plan(staging),
    }
    known = set(Manifest.model_fields) - {"objects", "redaction", "run_id", "schema_version"}
    leftovers: dict[str, Any] = {}
    for name, value in extra.items():
        if name in known:
            fields[name] = value
        else:
            leftovers[name] = value
    fields["extra"] = leftovers
    return Manifest.model_validate(fields)


def _read_json_object(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        payload = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return payload if isinstance(payload, dict) else {}


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _price_catalog_version(staging: Path, report: dict[str, Any]) -> str | None:
    for name in ("price_catalog_version", "priceCatalogVersion"):
        if found := _str_or_none(report.get(name)):
            return found
    episodes = staging / "episodes.jsonl"
    if not episodes.is_file():
        return None
    versions: set[str] = set()
    for line in episodes.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and (found := _str_or_none(record.get("priceCatalogVersion"))):
            versions.add(found)
    return ",".join(sorted(versions)) or None


def _study_plan(staging: Path) -> dict[str, Any] | None:
    """The run's frozen plan (``plan.json``, written when it started): id, source, sha256."""
    frozen = _read_json_object(staging / FROZEN_PLAN_NAME)
    plan = frozen.get("plan")
    if not isinstance(plan, dict) or not isinstance(frozen.get("sha256"), str):
        return None
    return {
        "id": str(plan.get("id")),
        "source": str(frozen.get("source")),
        "sha256": frozen["sha256"],
        "path": _str_or_none(frozen.get("path")),
    }


def _cohort_count(report: dict[str, Any]) -> int | None:
    cohorts = report.get("cohorts")
    if isinstance(cohorts, list):
        return len(cohorts)
    if isinstance(cohorts, int) and not isinstance(cohorts, bool):
        return cohorts
    return None


def _verdict(staging: Path, report: dict[str, Any]) -> str | None:
    for source in (report, _read_json_object(staging / "trials" / "verdict.json")):
        verdict = source.get("verdict")
        if isinstance(verdict, str):
            return verdict
        if isinstance(verdict, dict) and isinstance(verdict.get("overall"), str):
            return str(verdict["overall"])
    return None


def code_revision() -> str | None:
    """``git rev-parse HEAD`` of the pairlab checkout, else the installed package version."""
    checkout = Path(__file__).resolve().parents[3]
    try:
        result = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        if result.returncode == 0 and result.stdout.strip():
            return result.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return f"pairlab {importlib.metadata.version('pairlab')}"
    except importlib.metadata.PackageNotFoundError:
        return None


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
