"""Whether a pair's two runs differ only where the intervention says they may (loom's rules).

Checked only for a structurally valid pair. ``incomparable-workload``;
``incomparable-source-input`` (fixture, source revision or digest differ);
``incomparable-environment``; ``incomparable-acceptance-contract``;
``model-effort-mismatch`` when the assignment lists differ in length, or the
sorted provider, model or effort lists differ while that dimension is not
declared changed (the three lists are compared separately, not as tuples).
The engine adds ``incomparable-pair`` to an incomparable pair.
"""

from __future__ import annotations

from collections.abc import Callable

from pairlab.core.verdict.artifact import Assignment, ChangedDimension, Intervention, Pair
from pairlab.core.verdict.outcome import Finding, Findings
from pairlab.core.verdict.reasons import VerdictReason

R = VerdictReason


def _sorted(assignments: list[Assignment], field: Callable[[Assignment], str]) -> list[str]:
    return sorted(field(a) for a in assignments)


def _assignment_difference(manifest: Intervention, pair: Pair) -> str | None:
    base, cand = pair.baseline.assignments, pair.candidate.assignments
    if len(base) != len(cand):
        return f"{len(base)} assignments against {len(cand)}"
    declared = set(manifest.changed_dimensions)
    lists: tuple[tuple[str, Callable[[Assignment], str], ChangedDimension], ...] = (
        ("providers", lambda a: str(a.provider), ChangedDimension.PROVIDER_ASSIGNMENT),
        ("models", lambda a: a.model, ChangedDimension.MODEL_ASSIGNMENT),
        ("efforts", lambda a: a.effort, ChangedDimension.EFFORT_ASSIGNMENT),
    )
    for name, field, dimension in lists:
        if _sorted(base, field) != _sorted(cand, field) and dimension not in declared:
            return f"the {name} differ and {dimension} is not a declared change"
    return None


def assess_comparability(manifest: Intervention, pair: Pair) -> tuple[Finding, ...]:
    """The incomparability findings of a pair; empty when it is comparable."""
    base, cand = pair.baseline, pair.candidate
    found = Findings()
    if base.workload_id != cand.workload_id:
        found.add(R.INCOMPARABLE_WORKLOAD, "the runs did different workloads")
    if (base.fixture_id, base.source_input_revision, base.source_input_digest) != (
        cand.fixture_id,
        cand.source_input_revision,
        cand.source_input_digest,
    ):
        found.add(R.INCOMPARABLE_SOURCE_INPUT, "the fixture or source input differs")
    if base.environment_id != cand.environment_id:
        found.add(R.INCOMPARABLE_ENVIRONMENT, "the runs had different environments")
    if base.acceptance_contract_digest != cand.acceptance_contract_digest:
        found.add(
            R.INCOMPARABLE_ACCEPTANCE_CONTRACT,
            "the runs were held to different acceptance contracts",
        )
    difference = _assignment_difference(manifest, pair)
    if difference is not None:
        found.add(R.MODEL_EFFORT_MISMATCH, f"undeclared assignment change: {difference}")
    return tuple(found.items)
