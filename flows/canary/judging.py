"""Judging a finished canary (DESIGN 9, step 4): loom's artifact, written and judged.

The evidence becomes loom's version-1 comparison artifact
(``trials/artifact.json``, pairlab.core.canary), which is then read back from
disk and judged by the same engine as ``pairlab compare`` (so the verdict is the
one anybody gets from the file, pairlab or loom): ``trials/verdict.json`` holds
the ``--json`` report, ``trials/verdict.txt`` the ``--explain`` text, and a
markdown artifact shows it in the Prefect UI. Nothing is rolled back: the
evaluator only reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prefect.artifacts import create_markdown_artifact

from flows.canary.manifest import TRIALS
from pairlab.adapters.run.directory import RunDir
from pairlab.core.canary import RunEvidence, TrialManifest, build_artifact
from pairlab.core.verdict import VerdictReport, judge_file, render_explanation
from tasks.report import artifact_key
from tasks.retry import plain_task

ARTIFACT = f"{TRIALS}/artifact.json"


def write_artifact(
    run_dir: RunDir, manifest: TrialManifest, evidence: Sequence[RunEvidence]
) -> None:
    run_dir.write_json(ARTIFACT, build_artifact(manifest, evidence))


@plain_task("judge-trial-artifact")
def judge_trial_artifact(run_dir: RunDir, trial_id: str) -> VerdictReport:
    report = judge_file(run_dir.path / ARTIFACT)
    explanation = render_explanation(report)
    run_dir.write_json(f"{TRIALS}/verdict.json", report.to_json())
    run_dir.write_text(f"{TRIALS}/verdict.txt", explanation + "\n")
    create_markdown_artifact(
        key=artifact_key("verdict", trial_id),
        markdown=f"# Canary verdict `{trial_id}`\n\n```\n{explanation}\n```\n",
        description="pairlab canary verdict (pairlab compare --explain)",
    )
    return report


def judge_trial(
    run_dir: RunDir, trial_id: str, manifest: TrialManifest, evidence: Sequence[RunEvidence]
) -> VerdictReport:
    write_artifact(run_dir, manifest, evidence)
    return judge_trial_artifact(run_dir, trial_id)


def verdict_summary(report: VerdictReport) -> dict[str, Any]:
    return {
        "verdict": str(report.verdict),
        "subscription_verdict": str(report.subscription_verdict),
        "token_proxy_verdict": str(report.token_proxy_verdict),
        "exit_code": report.exit_code,
        "reason_codes": report.reason_codes,
    }
