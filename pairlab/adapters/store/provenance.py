"""A run's manifest: its objects (as staged, i.e. redacted) and its provenance.

Every object is listed with the sha256 and size of the bytes that are uploaded. The
provenance is read from the redacted copies: the run kind, code revision (the
report's, else this checkout's ``git rev-parse HEAD``, else the package version),
price catalog version(s), task catalog version, the trial's approval and verdict,
the number of cohorts, the frozen study plan and the intervention (the report's
``meta.intervention``). Extra metadata whose names are
manifest fields fill them; the rest is kept under ``extra``.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pairlab.adapters.store.base import sha256_file
from pairlab.core.analysis.study_plan import FROZEN_PLAN_NAME
from pairlab.core.run_manifest import Manifest, ManifestObject, RedactionSummary, RunKind


def build_manifest(
    run_id: str,
    staging: Path,
    keys: list[str],
    redaction: RedactionSummary,
    extra: dict[str, Any],
) -> Manifest:
    """The manifest of the staged objects ``keys`` (see the module docstring)."""
    report = read_json_object(staging / "report.json")
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
        "approval": read_json_object(staging / "trials" / "approval.json") or None,
        "cohorts": _cohort_count(report),
        "verdict": _verdict(staging, report) if kind == "trial" else None,
        "study_plan": _study_plan(staging),
        "intervention": _intervention(report),
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


def _intervention(report: dict[str, Any]) -> dict[str, Any] | None:
    """The run's intervention as its report recorded it (``meta.intervention``)."""
    meta = report.get("meta")
    found = meta.get("intervention") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else None


def read_json_object(path: Path) -> dict[str, Any]:
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
    frozen = read_json_object(staging / FROZEN_PLAN_NAME)
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
    for source in (report, read_json_object(staging / "trials" / "verdict.json")):
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


__all__ = ["build_manifest", "code_revision", "read_json_object"]
