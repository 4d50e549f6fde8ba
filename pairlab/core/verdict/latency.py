"""Latency evidence: any slower critical path or notification rejects.

Both measures must be known for both runs; a missing one is inconclusive,
never zero. Equal or faster is supported (no tolerance: the seed forbids
averaging away a regression, and one slower run is a regression).
"""

from __future__ import annotations

from pairlab.core.verdict.artifact import Run
from pairlab.core.verdict.outcome import Assessment, assess
from pairlab.core.verdict.reasons import VerdictReason


def assess_latency(base: Run, cand: Run) -> Assessment:
    rejects: set[VerdictReason] = set()
    doubts: set[VerdictReason] = set()
    measures = (
        ("critical_path_ms", VerdictReason.CRITICAL_PATH_REGRESSION),
        ("notification_ms", VerdictReason.NOTIFICATION_LATENCY_REGRESSION),
    )
    for name, regression in measures:
        before: float | None = getattr(base.latency, name)
        after: float | None = getattr(cand.latency, name)
        if before is None or after is None:
            doubts.add(VerdictReason.MISSING_LATENCY_EVIDENCE)
        elif after > before:
            rejects.add(regression)
    return assess(rejects, doubts)
