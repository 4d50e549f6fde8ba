"""The offline verdict on loom's version-1 paired comparison artifact (DESIGN 9).

    judge_file(path) / judge_artifact_bytes(data) -> VerdictReport
    VerdictReport.exit_code (0 supported, 1 rejected, 2 inconclusive), .to_json() (loom's shape)
    render_text(report) (loom's text form), render_explanation(report) (--explain)
    judge_intervals / judge_subscription / judge_pooled (quota.py): the subscription rules,
    for any caller (pairlab compare per pair; evidence-eval cohorts pooled)

Modules: artifact (loom's schema, decoding), loading (path/bytes → artifact or
reason), structure, comparability, quality, latency, tokens, quota (one concern
each), engine (pair and overall verdicts), report (JSON and text), explain
(plain words), reasons (the codes), outcome (verdict values and findings).
The evaluator only reports: it never kills workers, switches models or rolls back.
"""

from __future__ import annotations

from pairlab.core.verdict.artifact import MAX_ARTIFACT_BYTES, MAX_PAIRS, Artifact
from pairlab.core.verdict.engine import judge_artifact, judge_artifact_bytes, judge_file
from pairlab.core.verdict.explain import render_explanation
from pairlab.core.verdict.outcome import Verdict
from pairlab.core.verdict.quota import (
    SubscriptionJudgement,
    judge_intervals,
    judge_pooled,
    judge_subscription,
)
from pairlab.core.verdict.reasons import VerdictReason
from pairlab.core.verdict.report import CLAIM_SCOPE, PairVerdict, VerdictReport, render_text

__all__ = [
    "CLAIM_SCOPE",
    "MAX_ARTIFACT_BYTES",
    "MAX_PAIRS",
    "Artifact",
    "PairVerdict",
    "SubscriptionJudgement",
    "Verdict",
    "VerdictReason",
    "VerdictReport",
    "judge_artifact",
    "judge_artifact_bytes",
    "judge_file",
    "judge_intervals",
    "judge_pooled",
    "judge_subscription",
    "render_explanation",
    "render_text",
]
