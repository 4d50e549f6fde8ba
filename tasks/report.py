"""Tasks after the episodes: aggregate cohorts, render the report, publish the run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
)

from pairlab.adapters.run.directory import RunDir
from pairlab.adapters.run.outputs import publish_outputs, published_location, write_run_outputs
from pairlab.core.analysis.cohorts import resolve_gate
from pairlab.core.analysis.study_plan import ResolvedPlan
from pairlab.core.report.prefect_ui import (
    LINKED_FILES,
    cohort_tables,
    exploratory_note,
    headline_markdown,
)
from pairlab.core.report.run import analyse_records
from pairlab.core.schemas.episode import EpisodeRecord
from tasks.args import quoted
from tasks.retry import infra_task, plain_task


def artifact_key(prefix: str, run_id: str) -> str:
    """A Prefect artifact key for a run: lower-case letters, digits and dashes only."""
    return f"{prefix}-" + "".join(c if c.isalnum() else "-" for c in run_id.lower())[:60]


@plain_task("aggregate")
def aggregate_cohorts(
    records: Sequence[EpisodeRecord], run_id: str, min_pairs: int | None, plan: ResolvedPlan
) -> dict[str, Any]:
    return analyse_records(
        list(records), run_id=run_id, gate=resolve_gate(min_pairs, plan), plan=plan
    )


@plain_task("render-report")
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
    return {k: v for k, v in outputs.items() if isinstance(v, str) and k != "markdown"}


def show_results(report_json: str, store: str, run_id: str) -> list[str]:
    """The run's results in the UI, after publishing (so every link exists). Returns the
    artifact keys, headline first.

    The v1 UI lists a flow run's own artifacts above its task runs' (each group in no
    fixed order), so the headline is the flow run's only artifact — created here, in the
    flow — and the cohort tables (like the progress card) belong to a task run."""
    report = json.loads(Path(report_json).read_text(encoding="utf-8"))
    tables = cohort_table_artifacts(quoted(report), run_id)
    locations = {name: published_location(store, run_id, name) for _, name in LINKED_FILES}
    key = artifact_key("report", run_id)
    create_markdown_artifact(
        key=key,
        markdown=headline_markdown(report, locations),
        description=("EXPLORATORY — " if exploratory_note(report) else "")
        + "pairlab evidence: the headline",
    )
    return [key, *tables]


@plain_task("cohort-tables")
def cohort_table_artifacts(report: dict[str, Any], run_id: str) -> list[str]:
    """One table artifact per primary metric (pairlab/core/report/prefect_ui.py)."""
    note = exploratory_note(report)
    keys = []
    for metric, rows in cohort_tables(report).items():
        key = artifact_key(f"cohorts-{metric.lower()}", run_id)
        create_table_artifact(
            key=key,
            table=rows,
            description=f"{metric}: effect per task cohort (treatment − control) and its "
            "decision, as in report.json" + (f" — {note}" if note else ""),
        )
        keys.append(key)
    return keys


@plain_task("progress")
def progress_artifact(progress: float, description: str) -> UUID:
    """The progress card (a task run's artifact, so the headline stays first)."""
    created: UUID = create_progress_artifact(  # type: ignore[assignment]  # sync here
        progress=progress, key=None, description=description
    )
    return created


@infra_task("publish")
def publish_run_outputs(
    run_path: Any, store: str, on_secret: str, include_transcripts: bool = False
) -> dict[str, Any]:
    return publish_outputs(run_path, store, on_secret, include_transcripts)
