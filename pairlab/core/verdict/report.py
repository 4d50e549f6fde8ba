"""The verdict report: the ``pairlab compare --json`` shape and its text form.

The claim is bounded: it concerns the supplied finite fixture set only
(``claim_scope: finite-fixture-set``). The exit code is the overall verdict's
(0 supported-candidate, 1 rejected, 2 inconclusive); the token-proxy verdict is
reported beside it and never changes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from pairlab.core.verdict.loading import Problem
from pairlab.core.verdict.outcome import Verdict
from pairlab.core.verdict.quota import QuotaComparison
from pairlab.core.verdict.reasons import VerdictReason, sorted_codes

REPORT_SCHEMA_VERSION: Final = 1
CLAIM_SCOPE: Final = "finite-fixture-set"


@dataclass(frozen=True)
class PairVerdict:
    work_unit_id: str
    stratum: str | None
    verdict: Verdict
    token_proxy_verdict: Verdict
    subscription_verdict: Verdict
    quality_verdict: Verdict | None = None
    latency_verdict: Verdict | None = None
    is_comparable: bool | None = None
    reasons: frozenset[VerdictReason] = field(default_factory=frozenset)
    quota_comparisons: tuple[QuotaComparison, ...] = ()

    def to_json(self) -> dict[str, object]:
        def name(v: Verdict | None) -> str | None:
            return None if v is None else str(v)

        return {
            "work_unit_id": self.work_unit_id,
            "stratum": self.stratum,
            "verdict": str(self.verdict),
            "token_proxy_verdict": str(self.token_proxy_verdict),
            "subscription_verdict": str(self.subscription_verdict),
            "quality_verdict": name(self.quality_verdict),
            "latency_verdict": name(self.latency_verdict),
            "comparable": self.is_comparable,
            "reason_codes": sorted_codes(self.reasons),
            "quota_comparisons": [q.to_json() for q in self.quota_comparisons],
        }


@dataclass(frozen=True)
class VerdictReport:
    verdict: Verdict
    token_proxy_verdict: Verdict = Verdict.INCONCLUSIVE
    subscription_verdict: Verdict = Verdict.INCONCLUSIVE
    reasons: frozenset[VerdictReason] = field(default_factory=frozenset)
    pairs: tuple[PairVerdict, ...] = ()
    intervention_id: str | None = None
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
            "claim_scope": CLAIM_SCOPE,
            "intervention_id": self.intervention_id,
            "exit_code": self.exit_code,
            "pairs": [p.to_json() for p in self.pairs],
            "problems": [p.to_json() for p in self.problems],
        }


def refused(*reasons: VerdictReason, problems: Sequence[Problem] | None = None) -> VerdictReport:
    """The report for input that could not be judged at all (exit 2); ``problems`` say
    where each reason was found (default: one unlocated problem per reason)."""
    return VerdictReport(
        Verdict.INCONCLUSIVE,
        reasons=frozenset(reasons),
        problems=tuple(problems)
        if problems is not None
        else tuple(Problem("", r) for r in sorted(reasons)),
    )


def render_text(report: VerdictReport) -> str:
    lines = [f"pairlab compare: {report.verdict} (exit {report.exit_code})"]
    if report.intervention_id is not None:
        lines.append(f"  intervention:        {report.intervention_id}")
    lines += [
        f"  subscription:        {report.subscription_verdict}",
        f"  token proxy:         {report.token_proxy_verdict} (reported; does not set the exit code)",
        f"  claim scope:         {CLAIM_SCOPE} (the supplied fixtures only)",
        f"  reason codes:        {', '.join(report.reason_codes) or '-'}",
    ]
    for problem in report.problems:
        lines.append(f"  problem: {problem.where or '<artifact>'}: {problem.reason}")
    if report.pairs:
        lines.append("  pairs:")
    for pair in report.pairs:
        stratum = f" [{pair.stratum}]" if pair.stratum else ""
        lines.append(
            f"    {pair.work_unit_id}{stratum}: {pair.verdict}"
            f"  quality={pair.quality_verdict or '-'} latency={pair.latency_verdict or '-'}"
            f" subscription={pair.subscription_verdict} token-proxy={pair.token_proxy_verdict}"
        )
        if pair.reasons:
            lines.append(f"      reasons: {', '.join(sorted_codes(pair.reasons))}")
        for q in pair.quota_comparisons:
            lines.append(
                f"      quota {q.provider}/{q.window}: {q.outcome}"
                f" (baseline {q.baseline_consumption}, candidate {q.candidate_consumption},"
                f" ±{q.uncertainty})"
            )
    return "\n".join(lines)
