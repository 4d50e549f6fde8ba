"""Structural checks on a decoded artifact (LOOM-ARTIFACT §1-2), as loom makes them.

Whole-artifact failures (the report then has no pairs, exit 2), all reported
together: ``no-comparison-pairs``, ``pair-limit-exceeded``,
``invalid-identifier`` (the intervention's three ids) and
``invalid-intervention-manifest``.

Per pair: ``invalid-identifier``, ``evidence-limit-exceeded``,
``duplicate-run-id``, ``revision-manifest-mismatch``, then for each run
``missing-provider-assignment``, ``duplicate-provider-assignment``,
``duplicate-evidence-identity``, ``provider-evidence-mismatch``,
``invalid-token-vector`` and ``invalid-quota-observation``. A pair with any of
them stays in the report: it is never supported, but it can still be rejected
on quality or latency, and the other pairs are judged as usual.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable

from pairlab.core.verdict.artifact import (
    I64_MAX,
    MAX_EVIDENCE_ITEMS,
    MAX_PAIRS,
    MAX_RETRIES_OR_FIXES,
    Artifact,
    ChangedDimension,
    Pair,
    QuotaObservation,
    Run,
    is_identifier,
)
from pairlab.core.verdict.outcome import Finding, Findings
from pairlab.core.verdict.reasons import VerdictReason
from pairlab.core.verdict.tokens import vector_problem

R = VerdictReason


def artifact_findings(artifact: Artifact) -> tuple[Finding, ...]:
    found = Findings()
    manifest = artifact.intervention
    if not artifact.pairs:
        found.add(R.NO_COMPARISON_PAIRS, "the artifact has no pairs")
    if len(artifact.pairs) > MAX_PAIRS:
        found.add(R.PAIR_LIMIT_EXCEEDED, f"{len(artifact.pairs)} pairs; at most {MAX_PAIRS}")
    ids = (manifest.intervention_id, manifest.baseline_revision, manifest.candidate_revision)
    if not all(is_identifier(i) for i in ids):
        found.add(R.INVALID_IDENTIFIER, "an intervention id or revision is not a valid identifier")
    dims = manifest.changed_dimensions
    if not 1 <= len(dims) <= 4 or len(set(dims)) != len(dims):
        found.add(R.INVALID_INTERVENTION_MANIFEST, "changed_dimensions needs 1-4 distinct entries")
    elif (
        manifest.baseline_revision != manifest.candidate_revision
        and ChangedDimension.IMPLEMENTATION_REVISION not in dims
    ):
        found.add(
            R.INVALID_INTERVENTION_MANIFEST,
            "the revisions differ but implementation-revision is not a changed dimension",
        )
    return tuple(found.items)


def duplicate_run_ids(artifact: Artifact) -> frozenset[str]:
    counts = Counter(r.run_id for p in artifact.pairs for r in (p.baseline, p.candidate))
    return frozenset(run_id for run_id, n in counts.items() if n > 1)


def _run_ids(run: Run) -> tuple[str, ...]:
    return (
        run.run_id,
        run.workload_id,
        run.fixture_id,
        run.source_input_revision,
        run.source_input_digest,
        run.environment_id,
        run.acceptance_contract_digest,
        run.implementation_revision,
    )


def _evidence_ids(run: Run) -> Iterable[str]:
    for a in run.assignments:
        yield from (a.model, a.effort)
    for c in run.required_checks:
        yield from (c.command_id, c.contract_id)
    yield from (r.dimension for r in run.reviewed_dimensions)
    yield from (f.finding_id for f in run.unresolved_findings)
    yield from run.omitted_requirements


def _limit_exceeded(run: Run) -> bool:
    sizes = (
        len(run.assignments),
        len(run.required_checks),
        len(run.reviewed_dimensions),
        len(run.unresolved_findings),
        len(run.omitted_requirements),
        len(run.quota_observations or ()),
    )
    return (
        max(sizes) > MAX_EVIDENCE_ITEMS
        or run.retry_count > MAX_RETRIES_OR_FIXES
        or run.fix_count > MAX_RETRIES_OR_FIXES
    )


def _repeats(values: Iterable[Hashable]) -> bool:
    seen = list(values)
    return len(set(seen)) != len(seen)


def _quota_problem(q: QuotaObservation) -> str | None:
    if not is_identifier(q.reset_id):
        return "its reset_id is not a valid identifier"
    if not 0 < q.observed_end_at - q.observed_start_at <= I64_MAX:
        return "it does not end after it starts (or its length overflows)"
    if q.resets_at <= q.observed_start_at:
        return "its reset is not after its start"
    if not all(0.0 <= p <= 100.0 for p in (q.used_percent_start, q.used_percent_end)):
        return "a used percentage is outside 0-100"
    if q.precision_percent is not None and not 0.0 < q.precision_percent <= 100.0:
        return "its precision is outside (0, 100]"
    return None


def _check_run(arm: str, run: Run, found: Findings) -> None:
    assigned = [a.provider for a in run.assignments]
    if not assigned:
        found.add(R.MISSING_PROVIDER_ASSIGNMENT, f"the {arm} has no provider assignment")
    if _repeats(assigned):
        found.add(R.DUPLICATE_PROVIDER_ASSIGNMENT, f"the {arm} assigns one provider twice")
    quota = run.quota_observations or []
    if (
        _repeats((c.command_id, c.contract_id) for c in run.required_checks)
        or _repeats(r.dimension for r in run.reviewed_dimensions)
        or _repeats(f.finding_id for f in run.unresolved_findings)
        or _repeats(q.key for q in quota)
    ):
        found.add(
            R.DUPLICATE_EVIDENCE_IDENTITY,
            f"the {arm} lists a check, review, finding or quota window twice",
        )
    tokens, providers = set(run.provider_tokens), set(assigned)
    tokens_fit = tokens == providers if run.accounting_complete else tokens <= providers
    if not tokens_fit or any(q.provider not in providers for q in quota):
        found.add(
            R.PROVIDER_EVIDENCE_MISMATCH,
            f"the {arm}'s token vectors or quota observations do not match its assigned "
            "providers"
            + (" (complete accounting needs a vector per provider)" if not tokens_fit else ""),
        )
    if not all(is_identifier(i) for i in _evidence_ids(run)):
        found.add(R.INVALID_IDENTIFIER, f"an identifier in the {arm}'s evidence is invalid")
    for provider, vector in run.provider_tokens.items():
        problem = vector_problem(provider, vector)
        if problem is not None:
            found.add(R.INVALID_TOKEN_VECTOR, f"the {arm}'s {provider} vector: {problem}")
    for q in quota:
        problem = _quota_problem(q)
        if problem is not None:
            found.add(
                R.INVALID_QUOTA_OBSERVATION,
                f"the {arm}'s {q.provider} {q.window} quota observation: {problem}",
            )


def pair_findings(
    artifact: Artifact, pair: Pair, duplicate_ids: frozenset[str]
) -> tuple[Finding, ...]:
    """The structural findings of one pair (empty when it is structurally valid)."""
    found = Findings()
    base, cand = pair.baseline, pair.candidate
    if not (
        is_identifier(pair.work_unit_id)
        and all(is_identifier(i) for i in _run_ids(base) + _run_ids(cand))
    ):
        found.add(R.INVALID_IDENTIFIER, "a work-unit or run identifier is invalid")
    if _limit_exceeded(base) or _limit_exceeded(cand):
        found.add(
            R.EVIDENCE_LIMIT_EXCEEDED,
            f"a list holds more than {MAX_EVIDENCE_ITEMS} items, or a retry/fix count "
            f"exceeds {MAX_RETRIES_OR_FIXES}",
        )
    if base.run_id in duplicate_ids or cand.run_id in duplicate_ids:
        found.add(R.DUPLICATE_RUN_ID, "a run id of this pair is used by another run too")
    manifest = artifact.intervention
    if (
        base.implementation_revision != manifest.baseline_revision
        or cand.implementation_revision != manifest.candidate_revision
    ):
        found.add(
            R.REVISION_MANIFEST_MISMATCH,
            "a run's implementation revision is not the manifest's revision for its arm",
        )
    _check_run("baseline", base, found)
    _check_run("candidate", cand, found)
    return tuple(found.items)
