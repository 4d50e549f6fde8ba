"""The compare-artifact flow: judge a loom version-1 comparison artifact offline (DESIGN 9).

The same engine as ``pairlab compare`` (pairlab.core.verdict): the file's size is
checked before it is read; the flow returns the ``--json`` report (loom's shape)
and shows the ``--explain`` text as a markdown artifact. It reads one file and
changes nothing anywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from flows.params import CompareArtifactParams
from pairlab.core.verdict import judge_file, render_explanation
from tasks.retry import plain_task


@plain_task("judge-artifact-file")
def judge_artifact_file(path: str) -> dict[str, Any]:
    report = judge_file(Path(path))
    create_markdown_artifact(
        key="compare-artifact-verdict",
        markdown=(
            f"# Verdict: {report.verdict} (exit {report.exit_code})\n\n"
            f"Artifact `{Path(path).name}`\n\n```\n{render_explanation(report)}\n```\n"
        ),
        description="pairlab compare verdict",
    )
    return report.to_json()


@flow(name="compare-artifact", validate_parameters=True, log_prints=False)
def compare_artifact(params: CompareArtifactParams) -> dict[str, Any]:
    """Judge the artifact at ``params.artifact_path``; returns the `pairlab compare --json` report."""
    return judge_artifact_file(params.artifact_path)


def deployment() -> Any:
    return compare_artifact.to_deployment(
        name="compare-artifact",
        description="Judge a loom version-1 comparison artifact (offline; changes nothing).",
        tags=["pairlab", "canary"],
    )
