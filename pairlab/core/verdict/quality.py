"""Quality evidence: the candidate may not be worse than the baseline anywhere.

Rejects (DESIGN 9): candidate not accepted, failed semantic completion, a
baseline check absent from the candidate, a failed check, a review dimension
absent from the candidate or no longer independent, a failed review, a new or
worsened unresolved finding, any omitted requirement. Unknown candidate evidence
is inconclusive; so is an incomplete baseline (nothing to compare against).
"""

from __future__ import annotations

from pairlab.core.verdict.artifact import CheckStatus, ReviewResult, Run
from pairlab.core.verdict.outcome import Assessment, assess
from pairlab.core.verdict.reasons import VerdictReason


def _is_incomplete(run: Run) -> bool:
    return (
        run.acceptance.accepted is None
        or run.semantic_completion.passed is None
        or run.retry_count is None
        or run.fix_count is None
        or any(c.status is CheckStatus.MISSING for c in run.required_checks)
        or any(r.result is ReviewResult.MISSING for r in run.review_dimensions)
    )


def _verification_rejections(base: Run, cand: Run) -> set[VerdictReason]:
    found: set[VerdictReason] = set()
    cand_checks = {c.id: c.status for c in cand.required_checks}
    if any(c.id not in cand_checks for c in base.required_checks):
        found.add(VerdictReason.WEAKENED_VERIFICATION)
    if CheckStatus.FAILED in cand_checks.values():
        found.add(VerdictReason.FAILED_REQUIRED_CHECK)
    cand_reviews = {r.id: r for r in cand.review_dimensions}
    if any(r.id not in cand_reviews for r in base.review_dimensions) or any(
        not r.independent for r in cand.review_dimensions
    ):
        found.add(VerdictReason.WEAKENED_REVIEW)
    if any(r.result is ReviewResult.FAILED for r in cand.review_dimensions):
        found.add(VerdictReason.FAILED_REVIEW)
    return found


def _finding_rejections(base: Run, cand: Run) -> set[VerdictReason]:
    found: set[VerdictReason] = set()
    base_findings = {f.id: f.severity for f in base.unresolved_findings}
    for finding in cand.unresolved_findings:
        before = base_findings.get(finding.id)
        if before is None:
            found.add(VerdictReason.NEW_UNRESOLVED_FINDING)
        elif finding.severity.rank > before.rank:
            found.add(VerdictReason.WORSENED_UNRESOLVED_FINDING)
    if cand.omitted_requirements:
        found.add(VerdictReason.OMITTED_REQUIREMENT)
    return found


def assess_quality(base: Run, cand: Run) -> Assessment:
    rejects: set[VerdictReason] = set()
    if cand.acceptance.accepted is False:
        rejects.add(VerdictReason.CANDIDATE_NOT_ACCEPTED)
    if cand.semantic_completion.passed is False:
        rejects.add(VerdictReason.SEMANTIC_COMPLETION_FAILED)
    rejects |= _verification_rejections(base, cand)
    rejects |= _finding_rejections(base, cand)
    doubts: set[VerdictReason] = set()
    if _is_incomplete(cand):
        doubts.add(VerdictReason.MISSING_QUALITY_EVIDENCE)
    if _is_incomplete(base):
        doubts.add(VerdictReason.BASELINE_QUALITY_INCOMPLETE)
    return assess(rejects, doubts)
