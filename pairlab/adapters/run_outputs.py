"""Writing a run's outputs (DESIGN 11 layout) and handing them to the store.

``episodes.jsonl`` (transcripts only when the run asked for them; hashes always),
``episodes.parquet``, ``effects.parquet``, ``report.md``, ``report.json`` and
``forest.png``; ``manifest.json`` is written last by the publisher.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from pairlab.adapters.forest_plot import write_forest_plot
from pairlab.adapters.rundir import RunDir
from pairlab.core.cohort_report import effects_frame
from pairlab.core.cohorts import resolve_min_pairs
from pairlab.core.quota_consumption import record_columns
from pairlab.core.report import build_report_json, render_report_markdown
from pairlab.core.schemas.episode import EpisodeRecord

_NESTED = (
    "graderChecks",
    "quotaBefore",
    "quotaAfter",
    "quotaConsumption",
    "usageProvenance",
    "ledger",
    "transcript",
    "findingIds",
    "shadowFindingIds",
)


def episodes_table(records: Sequence[EpisodeRecord]) -> pl.DataFrame:
    """Flat episode table: nested fields as JSON strings, nulls kept; plus the account-wide
    quota windows' consumption as flat columns (null + reason column, never 0)."""
    rows = []
    for record in records:
        row = record.model_dump(mode="json", by_alias=True)
        for key in _NESTED:
            row[key] = None if row.get(key) is None else json.dumps(row[key], sort_keys=True)
        row.update(record_columns(record))
        rows.append(row)
    if not rows:
        return pl.DataFrame()
    return pl.DataFrame(rows, infer_schema_length=None)


def _plan_meta(plan: Any) -> dict[str, Any] | None:
    if not isinstance(plan, dict):
        return None
    return {k: plan.get(k) for k in ("id", "source", "sha256", "min_pairs", "alpha")}


def write_run_outputs(
    run_dir: RunDir,
    records: Sequence[EpisodeRecord],
    planned_ids: Sequence[str],
    analysis: dict[str, Any],
    params: Any,
    profile: Any,
    schedule: Any,
) -> dict[str, Any]:
    episodes_path = run_dir.write_episodes_jsonl(records, planned_ids)
    episodes_table(records).write_parquet(run_dir.path / "episodes.parquet")
    effects = effects_frame(analysis)
    effects.write_parquet(run_dir.path / "effects.parquet")
    catalog_versions = sorted({r.price_catalog_version for r in records if r.price_catalog_version})
    meta = {
        "run_id": run_dir.run_id,
        "suite": params.suite,
        "profile": params.profile,
        "backend": params.backend,
        "arms": list(params.arms),
        "repetitions": params.repetitions,
        "seed": schedule.seed,
        "episodes": len(records),
        "failed": sum(1 for r in records if not r.success),
        "excluded": sum(1 for r in records if r.excluded),
        "min_pairs": analysis.get("gate", resolve_min_pairs(params.min_pairs)),
        "exploratory": analysis.get("exploratory"),
        "study_plan": _plan_meta(analysis.get("plan")),
        "client": profile.client,
        "price_catalog_version": catalog_versions[-1] if catalog_versions else None,
        "include_transcript": params.include_transcript,
    }
    markdown = render_report_markdown(meta, analysis)
    report_md = run_dir.write_text("report.md", markdown)
    report_json = run_dir.write_json("report.json", build_report_json(meta, analysis))
    forest = write_forest_plot(analysis, run_dir.path / "forest.png", title=f"run {run_dir.run_id}")
    table_rows = [
        {k: (round(v, 2) if isinstance(v, float) else v) for k, v in row.items()}
        for row in effects.filter(pl.col("metric") == "totalTokens").to_dicts()
    ] or [
        {"status": c.get("status"), "pairs": c.get("pairs"), **c.get("key", {})}
        for c in analysis.get("cohorts", [])
    ]
    return {
        "episodes_jsonl": str(episodes_path),
        "report_md": str(report_md),
        "report_json": str(report_json),
        "forest_png": str(forest),
        "markdown": markdown,
        "table_rows": table_rows,
    }


def published_location(store: str, run_id: str, name: str) -> str:
    from pairlab.adapters.store import is_s3_url, local_store_root

    if is_s3_url(store):
        return f"{store.rstrip('/')}/runs/{run_id}/{name}"
    return str(local_store_root(store).resolve() / "runs" / run_id / name)


def publish_outputs(
    run_path: Path, store: str, on_secret: str, include_transcripts: bool = False
) -> dict[str, Any]:
    from pairlab.adapters.publish import publish_run
    from pairlab.adapters.store import open_store

    manifest = publish_run(
        Path(run_path),
        open_store(store),
        policy=on_secret,  # type: ignore[arg-type]
        include_transcripts=include_transcripts,
    )
    return {
        "objects": len(manifest.objects),
        "redaction": manifest.redaction.model_dump(mode="json"),
        "location": published_location(store, Path(run_path).name, ""),
    }
