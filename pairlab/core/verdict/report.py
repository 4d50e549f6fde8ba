"""The verdict report: loom's ``--json`` shape and loom's text form.

JSON (pretty-printed by the CLI), exactly loom's keys in loom's order::

    {schema_version: 1, verdict, token_proxy_verdict, subscription_verdict,
     reason_codes, pairs: [{work_unit_id, verdict, token_proxy_verdict,
     subscription_verdict, reason_codes, baseline_provider_tokens,
     candidate_provider_tokens, quota_comparisons}], claim_scope}

The claim is bounded to the supplied finite fixture set. The exit code is the
overall verdict's (0 supported-candidate, 1 rejected, 2 inconclusive); the
token-proxy verdict is reported beside it and never changes it. What decided
each verdict, in plain words, is :mod:`pairlab.core.verdict.explain`'s job; the
findings it needs travel here but are not part of the JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from pairlab.core.verdict.artifact import Provider, TokenVector, is_identifier
from pairlab.core.verdict.loading import Problem
from pairlab.core.verdict.outcome import Assessment, Finding, Verdict
from pairlab.core.verdict.quota import IntervalComparison
from pairlab.core.verdict.reasons import VerdictReason, sorted_codes

REPORT_SCHEMA_VERSION: Final = 1
CLAIM_SCOPE: Final = "finite-fixture-set"
INVALID_WORK_UNIT: Final = "invalid-work-unit"


def _tokens(vectors: dict[Provider, TokenVector]) -> dict[str, object]:
    return {str(p): vectors[p].model_dump(mode="json") for p in Provider if p in vectors}


@dataclass(frozen=True)
class PairVerdict:
    work_unit_id: str
    verdict: Verdict
    token_proxy_verdict: Verdict
    subscription_verdict: Verdict
    reasons: frozenset[VerdictReason]
    baseline_tokens: dict[Provider, TokenVector] = field(default_factory=dict)
    candidate_tokens: dict[Provider, TokenVector] = field(default_factory=dict)
    quota_comparisons: tuple[IntervalComparison, ...] = ()
    # what --explain needs (not in the JSON)
    structure: tuple[Finding, ...] = ()
    comparability: tuple[Finding, ...] = ()
    quality: Assessment | None = None
    latency: Assessment | None = None
    token_proxy: Assessment | None = None  # None: not evaluated (structure/comparability)
    subscription: Assessment | None = None

    @property
    def shown_id(self) -> str:
        return self.work_unit_id if is_identifier(self.work_unit_id) else INVALID_WORK_UNIT

    @property
    def is_comparable(self) -> bool:
        return not self.structure and not self.comparability

    def to_json(self) -> dict[str, object]:
        return {
            "work_unit_id": self.shown_id,
            "verdict": str(self.verdict),
            "token_proxy_verdict": str(self.token_proxy_verdict),
            "subscription_verdict": str(self.subscription_verdict),
            "reason_codes": sorted_codes(self.reasons),
            "baseline_provider_tokens": _tokens(self.baseline_tokens),
            "candidate_provider_tokens": _tokens(self.candidate_tokens),
            "quota_comparisons": [q.to_json() for q in self.quota_comparisons],
        }


@dataclass(frozen=True)
class VerdictReport:
    verdict: Verdict
    token_proxy_verdict: Verdict = Verdict.INCONCLUSIVE
    subscription_verdict: Verdict = Verdict.INCONCLUSIVE
    reasons: frozenset[VerdictReason] = field(default_factory=frozenset)
    pairs: tuple[PairVerdict, ...] = ()
    # what --explain needs (not in the JSON): why the whole artifact was refused
    refusal: tuple[Finding, ...] = ()
    problems: tuple[Problem, ...] = ()

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    @property
    def reason_codes(self) -> list[str]:
        return sorted_codes(self.reasons)

    def to_json(self) -> dict[str, object]:
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "verdict": str(self.verdict),
            "token_proxy_verdict": str(self.token_proxy_verdict),
            "subscription_verdict": str(self.subscription_verdict),
            "reason_codes": self.reason_codes,
            "pairs": [p.to_json() for p in self.pairs],
            "claim_scope": CLAIM_SCOPE,
        }


def refused(*findings: Finding, problems: tuple[Problem, ...] = ()) -> VerdictReport:
    """The report for an artifact that could not be judged at all: every verdict
    inconclusive, no pairs, exit 2."""
    return VerdictReport(
        Verdict.INCONCLUSIVE,
        reasons=frozenset(f.reason for f in findings),
        refusal=tuple(findings),
        problems=problems,
    )


def render_text(report: VerdictReport) -> str:
    """loom's text form: the three verdicts, then one line per pair (or the reasons)."""
    lines = [
        f"comparison: {report.verdict}; token proxy: {report.token_proxy_verdict}; "
        f"subscription: {report.subscription_verdict}"
    ]
    for pair in report.pairs:
        codes = sorted_codes(pair.reasons)
        lines.append(
            f"{pair.shown_id}: {pair.verdict}" + (f" ({', '.join(codes)})" if codes else "")
        )
    if not report.pairs and report.reasons:
        lines.append(f"reasons: {', '.join(report.reason_codes)}")
    return "\n".join(lines)
