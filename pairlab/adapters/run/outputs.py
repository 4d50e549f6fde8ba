"""Writing a run's outputs (DESIGN 11 layout) and handing them to the store.

``episodes.jsonl`` (transcripts only when the run asked for them; hashes always),
``episodes.parquet``, ``run.json`` (the report's settings), ``effects.parquet``
(token and subscription effects), ``report.md``, ``report.json``, ``report.html``
(:mod:`pairlab.core.report.run`, the same builder ``pairlab report`` uses) and
``forest.png``; ``manifest.json`` is written last by the publisher.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from pairlab.adapters.run.directory import RunDir, write_atomic
from pairlab.adapters.run.forest_plot import PLOTTED_METRIC, write_forest_plot
from pairlab.adapters.run.quota_interval_files import read_intervals_jsonl
from pairlab.core.analysis.cohorts import resolve_min_pairs
from pairlab.core.analysis.study_plan import FROZEN_PLAN_NAME, read_frozen_plan
from pairlab.core.quota.consumption import record_columns
from pairlab.core.report.run import (
    REPORT_FILES,
    RUN_SETTINGS_NAME,
    QuotaIntervalSettings,
    RenderedReport,
    RunSettings,
    render_run_report,
)
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.verdict.artifact import Provider

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


def run_settings(params: Any, profile: Any, schedule: Any, gate: int) -> RunSettings:
    """``run.json`` of an evidence-eval run: its parameters as the report names them."""
    return RunSettings(
        run_id=schedule.run_id,
        suite=params.suite,
        profile=params.profile,
        backend=params.backend,
        arms=list(params.arms),
        repetitions=params.repetitions,
        seed=schedule.seed,
        client=profile.client,
        include_transcript=params.include_transcript,
        gate=gate,
        quota_provider=quota_provider(profile),
        quota_intervals=None
        if schedule.quota_intervals is None
        else QuotaIntervalSettings(
            episodes_per_interval=schedule.quota_intervals.episodes_per_interval,
            interval_s=schedule.quota_intervals.interval_s,
        ),
    )


def quota_provider(profile: Any) -> Provider | None:
    """The provider loom's quota observations name for the profile's client: its usage
    reader's (the simulator writes claude's or codex's records), None for others."""
    try:
        return Provider(profile.usage.reader)
    except ValueError:
        return None


def write_report_files(run_path: Path, rendered: RenderedReport) -> dict[str, Path]:
    """``report.json``, ``report.md`` and ``report.html`` into ``run_path``."""
    written = {}
    for name in REPORT_FILES:
        path = run_path / name
        write_atomic(path, rendered.text_of(name).encode("utf-8"))
        written[name] = path
    return written


def _token_metric(headline: dict[str, Any]) -> str:
    """The headline's token metric (the plan's primary token metric)."""
    for group in headline.get("groups", []):
        for row in group.get("contrasts", []):
            return str(row["tokens"]["metric"])
    return PLOTTED_METRIC


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
    settings = run_settings(
        params, profile, schedule, int(analysis.get("gate", resolve_min_pairs(params.min_pairs)))
    )
    write_atomic(run_dir.path / RUN_SETTINGS_NAME, settings.to_json_text().encode("utf-8"))
    rendered = render_run_report(
        settings,
        records,
        read_intervals_jsonl(run_dir.path),
        read_frozen_plan(run_dir.path / FROZEN_PLAN_NAME),
        analysis,
    )
    rendered.effects.write_parquet(run_dir.path / "effects.parquet")
    written = write_report_files(run_dir.path, rendered)
    metric = _token_metric(rendered.payload["headline"])
    forest = write_forest_plot(
        analysis, run_dir.path / "forest.png", title=f"run {run_dir.run_id}", metric=metric
    )
    effects = rendered.effects
    table_rows = [
        {k: (round(v, 2) if isinstance(v, float) else v) for k, v in row.items()}
        for row in effects.filter(pl.col("metric") == metric).to_dicts()
    ] or [
        {"status": c.get("status"), "pairs": c.get("pairs"), **c.get("key", {})}
        for c in analysis.get("cohorts", [])
    ]
    return {
        "episodes_jsonl": str(episodes_path),
        "report_md": str(written["report.md"]),
        "report_json": str(written["report.json"]),
        "report_html": str(written["report.html"]),
        "forest_png": str(forest),
        "markdown": rendered.markdown,
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
    from pairlab.adapters.store import open_store
    from pairlab.adapters.store.publish import publish_run

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
