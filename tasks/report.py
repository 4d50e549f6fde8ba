"""Tasks after the episodes: aggregate cohorts, render the report, publish the run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from pairlab.adapters.run_outputs import publish_outputs, write_run_outputs
from pairlab.adapters.rundir import RunDir
from pairlab.core.cohorts import analyse_cohorts, resolve_min_pairs
from pairlab.core.schemas.episode import EpisodeRecord
from tasks.retry import infra_task


@task(name="aggregate", cache_policy=NO_CACHE, persist_result=False)
def aggregate_cohorts(
    records: Sequence[EpisodeRecord], run_id: str, min_pairs: int | None
) -> dict[str, Any]:
    analysis = analyse_cohorts(list(records), run_id=run_id, min_pairs=resolve_min_pairs(min_pairs))
    return analysis.to_json()


@task(name="render-report", cache_policy=NO_CACHE, persist_result=False)
def render_report(
    run_dir: RunDir,
    records: Sequence[EpisodeRecord],
    planned_ids: Sequence[str],
    analysis: dict[str, Any],
    params: Any,
    profile: Any,
    schedule: Any,
) -> dict[str, str]:
    outputs = write_run_outputs(run_dir, records, planned_ids, analysis, params, profile, schedule)
    safe_key = "".join(c if c.isalnum() else "-" for c in run_dir.run_id.lower())[:60]
    create_markdown_artifact(
        key=f"report-{safe_key}",
        markdown=outputs["markdown"],
        description="pairlab evidence report",
    )
    create_table_artifact(
        key=f"cohorts-{safe_key}", table=outputs["table_rows"], description="cohort effects"
    )
    return {k: v for k, v in outputs.items() if isinstance(v, str) and k != "markdown"}


@infra_task("publish")
def publish_run_outputs(
    run_path: Any, store: str, on_secret: str, include_transcripts: bool = False
) -> dict[str, Any]:
    return publish_outputs(run_path, store, on_secret, include_transcripts)
