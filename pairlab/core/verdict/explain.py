"""``pairlab compare --explain``: which rule decided each verdict, in plain words.

Written for an operator deciding whether to roll a candidate back: first the
overall answer and what it means for that decision, then for every pair the
rule that decided its verdict and one line per dimension (quality, latency,
subscription, and the token proxy, which is reported but never decides). The
reason codes are the same as in ``--json``; nothing here changes a verdict.
"""

from __future__ import annotations

from typing import Final

from pairlab.core.verdict.outcome import Assessment, Finding, Verdict
from pairlab.core.verdict.report import CLAIM_SCOPE, PairVerdict, VerdictReport

MEANING: Final = {
    Verdict.REJECTED: (
        "Reject the candidate. At least one pair shows a quality, latency or subscription "
        "regression, and one regression is never averaged away by other pairs. Roll back with "
        "your ordinary scoped revert procedure (pairlab never rolls anything back, kills "
        "workers or switches models itself) and keep this evidence for the investigation."
    ),
    Verdict.INCONCLUSIVE: (
        "No decision either way. The evidence neither supports nor rejects the candidate: keep "
        "it conditional, claim no savings, and collect the missing evidence named below."
    ),
    Verdict.SUPPORTED: (
        "Supported for the supplied fixtures: every pair is comparable and shows subscription, "
        "quality and latency evidence for the candidate."
    ),
}
GATES: Final = ("quality", "latency", "subscription")


def _codes(findings: tuple[Finding, ...]) -> str:
    return ", ".join(sorted({str(f.reason) for f in findings}))


def _because(findings: tuple[Finding, ...]) -> str:
    return "; ".join(f"{f.detail} ({f.reason})" for f in findings)


def _line(name: str, assessment: Assessment | None, *, note: str = "") -> str:
    if assessment is None:
        return (
            f"    {name:<13} {'inconclusive':<19} not compared: the pair is structurally "
            f"invalid or not like for like (incomparable-pair){note}"
        )
    what = _because(assessment.findings) if assessment.findings else assessment.checked
    return f"    {name:<13} {assessment.verdict:<19} {what}{note}"


def _gates(pair: PairVerdict) -> dict[str, Assessment | None]:
    return {"quality": pair.quality, "latency": pair.latency, "subscription": pair.subscription}


def _decided_by(pair: PairVerdict) -> str:
    gates = _gates(pair)
    if pair.verdict is Verdict.SUPPORTED:
        return "quality, latency and subscription all support the candidate on a comparable pair"
    if pair.verdict is Verdict.REJECTED:
        rejecting = [
            f"{name} — {_because(tuple(a.findings))}"
            for name, a in gates.items()
            if a is not None and a.verdict is Verdict.REJECTED
        ]
        return "a regression in " + " | ".join(rejecting)
    parts = []
    if pair.structure:
        parts.append(f"the pair's evidence is structurally invalid — {_because(pair.structure)}")
    elif pair.comparability:
        parts.append(f"the runs are not comparable — {_because(pair.comparability)}")
    parts += [
        f"{name} is inconclusive ({_codes(a.findings)})"
        for name, a in gates.items()
        if a is not None and a.verdict is Verdict.INCONCLUSIVE
    ]
    return "missing or insufficient evidence: " + " | ".join(parts)


def _pair(pair: PairVerdict) -> list[str]:
    lines = [f"pair {pair.shown_id}: {pair.verdict}", f"  decided by: {_decided_by(pair)}"]
    lines += [_line(name, a) for name, a in _gates(pair).items()]
    lines.append(_line("token proxy", pair.token_proxy, note="  [reported only; never decides]"))
    return lines


def render_explanation(report: VerdictReport) -> str:
    lines = [
        f"overall: {report.verdict} (exit {report.exit_code}); "
        f"subscription {report.subscription_verdict}; token proxy {report.token_proxy_verdict}",
        f"  what it means: {MEANING[report.verdict]}",
        f"  scope: {CLAIM_SCOPE} — the claim covers the supplied fixtures only; the token "
        "proxy is reported but never decides the verdict or the exit code.",
    ]
    if report.refusal:
        lines.append("  the artifact was not judged:")
        lines += [f"    {f.reason}: {f.detail}" for f in report.refusal]
        lines += [f"      at {p.where or '<document>'}: {p.what}" for p in report.problems]
    for pair in report.pairs:
        lines.append("")
        lines += _pair(pair)
    return "\n".join(lines)
