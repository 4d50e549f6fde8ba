"""Quality evidence, judged as loom judges it: the worst of five rules.

1. Candidate status: not accepted → ``candidate-not-accepted`` (reject); else
   semantic completion failed → ``semantic-completion-failed`` (reject); else
   acceptance or completion unknown → ``missing-quality-evidence``.
2. Checks: a baseline (command, contract) absent from the candidate →
   ``weakened-verification`` (reject); else a failed candidate check →
   ``failed-required-check`` (reject); else an unknown check or none at all →
   ``missing-quality-evidence``.
3. Reviews: a baseline dimension absent from the candidate, or a candidate
   review that is not independent → ``weakened-review`` (reject); else a failed
   review → ``failed-review`` (reject); else unknown or none →
   ``missing-quality-evidence``.
4. Findings: the first candidate finding that is new → ``new-unresolved-finding``,
   or more severe than in the baseline → ``worsened-unresolved-finding`` (reject).
5. Any omitted requirement → ``omitted-requirement`` (reject).

Absent evidence is not support: unless the baseline is itself complete
(accepted, semantic completion passed, a non-empty list of passed checks, a
non-empty list of independent passed reviews, nothing omitted) the result also
carries ``baseline-quality-incomplete`` and is at best inconclusive.
"""

from __future__ import annotations

from collections.abc import Iterable

from pairlab.core.verdict.artifact import EvidenceVerdict, Pair, Run
from pairlab.core.verdict.outcome import Assessment, Findings, Verdict, worst
from pairlab.core.verdict.reasons import VerdictReason

R = VerdictReason
PASSED, FAILED, UNKNOWN = EvidenceVerdict.PASSED, EvidenceVerdict.FAILED, EvidenceVerdict.UNKNOWN


def _completion(cand: Run, found: Findings) -> Verdict:
    if cand.accepted is False:
        found.add(R.CANDIDATE_NOT_ACCEPTED, "the candidate was not accepted")
        return Verdict.REJECTED
    if cand.semantic_completion is FAILED:
        found.add(R.SEMANTIC_COMPLETION_FAILED, "the candidate failed semantic completion")
        return Verdict.REJECTED
    if cand.accepted is None or cand.semantic_completion is UNKNOWN:
        found.add(
            R.MISSING_QUALITY_EVIDENCE,
            "the candidate's acceptance or semantic completion is unknown",
        )
        return Verdict.INCONCLUSIVE
    return Verdict.SUPPORTED


def _results(
    verdicts: Iterable[EvidenceVerdict], what: str, failed: VerdictReason, found: Findings
) -> Verdict:
    seen = list(verdicts)
    if FAILED in seen:
        found.add(failed, f"{seen.count(FAILED)} of the candidate's {what} failed")
        return Verdict.REJECTED
    if not seen or UNKNOWN in seen:
        found.add(
            R.MISSING_QUALITY_EVIDENCE,
            f"the candidate has no {what}" if not seen else f"a candidate {what[:-1]} is unknown",
        )
        return Verdict.INCONCLUSIVE
    return Verdict.SUPPORTED


def _checks(pair: Pair, found: Findings) -> Verdict:
    cand = {(c.command_id, c.contract_id): c.verdict for c in pair.candidate.required_checks}
    missing = [
        c.command_id
        for c in pair.baseline.required_checks
        if (c.command_id, c.contract_id) not in cand
    ]
    if missing:
        found.add(
            R.WEAKENED_VERIFICATION,
            f"the candidate dropped the baseline's check(s) {', '.join(missing)}",
        )
        return Verdict.REJECTED
    return _results(cand.values(), "required checks", R.FAILED_REQUIRED_CHECK, found)


def _reviews(pair: Pair, found: Findings) -> Verdict:
    cand = {r.dimension: r for r in pair.candidate.reviewed_dimensions}
    missing = [r.dimension for r in pair.baseline.reviewed_dimensions if r.dimension not in cand]
    dependent = [r.dimension for r in cand.values() if not r.independent]
    if missing or dependent:
        found.add(
            R.WEAKENED_REVIEW,
            "the candidate's review is weaker: "
            + "; ".join(
                part
                for part in (
                    f"dropped {', '.join(missing)}" if missing else "",
                    f"not independent: {', '.join(dependent)}" if dependent else "",
                )
                if part
            ),
        )
        return Verdict.REJECTED
    return _results((r.verdict for r in cand.values()), "reviews", R.FAILED_REVIEW, found)


def _findings(pair: Pair, found: Findings) -> Verdict:
    before = {f.finding_id: f.severity for f in pair.baseline.unresolved_findings}
    for finding in pair.candidate.unresolved_findings:
        old = before.get(finding.finding_id)
        if old is None:
            found.add(
                R.NEW_UNRESOLVED_FINDING,
                f"new unresolved finding {finding.finding_id} ({finding.severity})",
            )
            return Verdict.REJECTED
        if finding.severity.rank > old.rank:
            found.add(
                R.WORSENED_UNRESOLVED_FINDING,
                f"finding {finding.finding_id} worsened from {old} to {finding.severity}",
            )
            return Verdict.REJECTED
    return Verdict.SUPPORTED


def baseline_is_complete(run: Run) -> bool:
    return (
        run.accepted is True
        and run.semantic_completion is PASSED
        and bool(run.required_checks)
        and all(c.verdict is PASSED for c in run.required_checks)
        and bool(run.reviewed_dimensions)
        and all(r.independent and r.verdict is PASSED for r in run.reviewed_dimensions)
        and not run.omitted_requirements
    )


def assess_quality(pair: Pair) -> Assessment:
    found = Findings()
    cand = pair.candidate
    verdicts = [
        _completion(cand, found),
        _checks(pair, found),
        _reviews(pair, found),
        _findings(pair, found),
    ]
    if cand.omitted_requirements:
        found.add(
            R.OMITTED_REQUIREMENT,
            f"the candidate omitted {', '.join(cand.omitted_requirements)}",
        )
        verdicts.append(Verdict.REJECTED)
    if not baseline_is_complete(pair.baseline):
        found.add(
            R.BASELINE_QUALITY_INCOMPLETE,
            "the baseline's own quality evidence is incomplete (it must be accepted, pass "
            "semantic completion, and pass at least one check and one independent review, "
            "omitting nothing), so there is nothing sound to compare against",
        )
        verdicts.append(Verdict.INCONCLUSIVE)
    n_checks, n_reviews = len(cand.required_checks), len(cand.reviewed_dimensions)
    return found.assessment(
        worst(verdicts),
        f"accepted, semantic completion passed, {n_checks} required check(s) and "
        f"{n_reviews} independent review(s) passed, no new or worse findings, nothing omitted",
    )
