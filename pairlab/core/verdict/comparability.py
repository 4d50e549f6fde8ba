"""Whether a pair's two runs differ only where the intervention says they may.

Unlisted workload, fixture, source-input, environment, acceptance-contract,
provider, model or effort differences make a pair incomparable. An incomparable
pair can still be rejected on quality or latency, but is never supported.
"""

from __future__ import annotations

from pairlab.core.verdict.artifact import ChangedDimension, InterventionManifest, Pair, Run
from pairlab.core.verdict.reasons import VerdictReason


def _models(run: Run) -> list[str]:
    return sorted(a.model for a in run.assignments)


def _efforts(run: Run) -> list[str]:
    return sorted(a.effort or "" for a in run.assignments)


def assess_comparability(manifest: InterventionManifest, pair: Pair) -> frozenset[VerdictReason]:
    """The incomparability codes of a pair; empty when it is comparable."""
    base, cand = pair.baseline, pair.candidate
    declared = set(manifest.changed_dimensions)
    found: set[VerdictReason] = set()
    if base.workload_id != cand.workload_id or sorted(base.fixture_ids) != sorted(cand.fixture_ids):
        found.add(VerdictReason.INCOMPARABLE_WORKLOAD)
    if (base.source_input_revision, base.source_input_digest) != (
        cand.source_input_revision,
        cand.source_input_digest,
    ):
        found.add(VerdictReason.INCOMPARABLE_SOURCE_INPUT)
    if base.environment_id != cand.environment_id:
        found.add(VerdictReason.INCOMPARABLE_ENVIRONMENT)
    if base.acceptance_contract_id != cand.acceptance_contract_id:
        found.add(VerdictReason.INCOMPARABLE_ACCEPTANCE_CONTRACT)
    provider_changed = base.providers != cand.providers
    if provider_changed and ChangedDimension.PROVIDER_ASSIGNMENT not in declared:
        found.add(VerdictReason.INCOMPARABLE_PAIR)
    if (_models(base) != _models(cand) and ChangedDimension.MODEL_ASSIGNMENT not in declared) or (
        _efforts(base) != _efforts(cand) and ChangedDimension.EFFORT_ASSIGNMENT not in declared
    ):
        found.add(VerdictReason.MODEL_EFFORT_MISMATCH)
    if found:
        found.add(VerdictReason.INCOMPARABLE_PAIR)
    return frozenset(found)
