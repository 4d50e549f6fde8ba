"""Latency evidence: any slower critical path or notification rejects (loom's rule).

Each measure separately: unknown on either side → ``missing-latency-evidence``
(unknown is never zero); the candidate slower by even one millisecond →
``critical-path-regression`` / ``notification-latency-regression`` (rejected:
one slower run is a regression, never averaged away); equal or faster passes.
"""

from __future__ import annotations

from pairlab.core.verdict.artifact import Pair
from pairlab.core.verdict.outcome import Assessment, Findings, Verdict, worst
from pairlab.core.verdict.reasons import VerdictReason


def _measure(
    name: str, before: int | None, after: int | None, regression: VerdictReason, found: Findings
) -> Verdict:
    if before is None or after is None:
        found.add(VerdictReason.MISSING_LATENCY_EVIDENCE, f"the {name} is unknown in a run")
        return Verdict.INCONCLUSIVE
    if after > before:
        found.add(regression, f"the candidate's {name} was slower: {after} ms against {before} ms")
        return Verdict.REJECTED
    return Verdict.SUPPORTED


def assess_latency(pair: Pair) -> Assessment:
    base, cand = pair.baseline, pair.candidate
    found = Findings()
    verdict = worst(
        (
            _measure(
                "critical path",
                base.critical_path_ms,
                cand.critical_path_ms,
                VerdictReason.CRITICAL_PATH_REGRESSION,
                found,
            ),
            _measure(
                "notification latency",
                base.notification_latency_ms,
                cand.notification_latency_ms,
                VerdictReason.NOTIFICATION_LATENCY_REGRESSION,
                found,
            ),
        )
    )
    return found.assessment(
        verdict,
        f"critical path {cand.critical_path_ms} ms (baseline {base.critical_path_ms} ms), "
        f"notification {cand.notification_latency_ms} ms "
        f"(baseline {base.notification_latency_ms} ms): not slower",
    )
