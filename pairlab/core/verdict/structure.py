"""Structural checks on a schema-valid artifact.

These find evidence that cannot be trusted as a whole: no pairs, a run id used
twice, runs whose revision disagrees with the intervention manifest, missing or
duplicated provider assignments, evidence listed twice, and token vectors or
quota intervals for a provider the run was not assigned. Any structural finding
makes the artifact inconclusive (exit 2) without judging its pairs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pairlab.core.verdict.artifact import Artifact, Pair, Run
from pairlab.core.verdict.reasons import VerdictReason


@dataclass(frozen=True)
class StructureReport:
    artifact_reasons: frozenset[VerdictReason]
    pair_reasons: tuple[frozenset[VerdictReason], ...]

    @property
    def is_valid(self) -> bool:
        return not self.artifact_reasons and not any(self.pair_reasons)


def _has_duplicates(values: Iterable[object]) -> bool:
    seen = list(values)
    return len(set(seen)) != len(seen)


def check_run(run: Run) -> set[VerdictReason]:
    found: set[VerdictReason] = set()
    if not run.assignments:
        found.add(VerdictReason.MISSING_PROVIDER_ASSIGNMENT)
    if _has_duplicates(a.provider for a in run.assignments):
        found.add(VerdictReason.DUPLICATE_PROVIDER_ASSIGNMENT)
    identities: Sequence[Iterable[object]] = (
        run.fixture_ids,
        (c.id for c in run.required_checks),
        (r.id for r in run.review_dimensions),
        (f.id for f in run.unresolved_findings),
        run.omitted_requirements,
        (v.provider for v in run.token_vectors),
        ((q.provider, q.window) for q in run.quota_intervals),
    )
    if any(_has_duplicates(ids) for ids in identities):
        found.add(VerdictReason.DUPLICATE_EVIDENCE_IDENTITY)
    evidence_providers = {v.provider for v in run.token_vectors} | {
        q.provider for q in run.quota_intervals
    }
    if not evidence_providers <= run.providers:
        found.add(VerdictReason.PROVIDER_EVIDENCE_MISMATCH)
    return found


def check_pair(artifact: Artifact, pair: Pair) -> set[VerdictReason]:
    found = check_run(pair.baseline) | check_run(pair.candidate)
    manifest = artifact.intervention
    if (
        pair.baseline.implementation_revision != manifest.baseline_revision
        or pair.candidate.implementation_revision != manifest.candidate_revision
    ):
        found.add(VerdictReason.REVISION_MANIFEST_MISMATCH)
    return found


def check_structure(artifact: Artifact) -> StructureReport:
    artifact_reasons: set[VerdictReason] = set()
    if not artifact.pairs:
        artifact_reasons.add(VerdictReason.NO_COMPARISON_PAIRS)
    run_ids = Counter(
        run.run_id for pair in artifact.pairs for run in (pair.baseline, pair.candidate)
    )
    work_units = Counter((pair.work_unit_id, pair.stratum) for pair in artifact.pairs)
    per_pair: list[frozenset[VerdictReason]] = []
    for pair in artifact.pairs:
        found = check_pair(artifact, pair)
        if run_ids[pair.baseline.run_id] > 1 or run_ids[pair.candidate.run_id] > 1:
            found.add(VerdictReason.DUPLICATE_RUN_ID)
        if work_units[(pair.work_unit_id, pair.stratum)] > 1:
            found.add(VerdictReason.DUPLICATE_EVIDENCE_IDENTITY)
        per_pair.append(frozenset(found))
    return StructureReport(frozenset(artifact_reasons), tuple(per_pair))
