"""The token-proxy verdict: raw native dimensions compared within each provider.

Claude and Codex vectors stay separate; composites (totals, resident input,
cache-creation total, reasoning) are never compared or added. An improvement
needs no increase in any comparable dimension and a strict decrease in at least
one. A provider transfer, a missing vector or dimension, non-canonical
accounting, a tradeoff between dimensions and an unchanged vector are all
inconclusive; increases without any decrease are a proxy regression (rejected).
The proxy verdict is reported but never decides the exit code.
"""

from __future__ import annotations

from pairlab.core.verdict.artifact import Provenance, Run, proxy_dimensions
from pairlab.core.verdict.outcome import Assessment, Verdict
from pairlab.core.verdict.reasons import VerdictReason


def _inconclusive(*reasons: VerdictReason) -> Assessment:
    return Assessment(Verdict.INCONCLUSIVE, frozenset(reasons))


def _is_measured(run: Run) -> bool:
    return run.accounting is not None and run.accounting.provenance is Provenance.MEASURED_CANONICAL


def assess_token_proxy(base: Run, cand: Run) -> Assessment:
    if not (_is_measured(base) and _is_measured(cand)):
        return _inconclusive(VerdictReason.MISSING_ACCOUNTING_EVIDENCE)
    if base.providers != cand.providers:
        return _inconclusive(VerdictReason.CROSS_PROVIDER_TRANSFER)
    base_vectors: dict[str, dict[str, int | None]] = {
        v.provider: proxy_dimensions(v) for v in base.token_vectors
    }
    cand_vectors: dict[str, dict[str, int | None]] = {
        v.provider: proxy_dimensions(v) for v in cand.token_vectors
    }
    if any(p not in base_vectors or p not in cand_vectors for p in base.providers):
        return _inconclusive(VerdictReason.MISSING_PROVIDER_TOKEN_VECTOR)
    increased = decreased = missing = False
    for provider in sorted(base.providers):
        before, after = base_vectors[provider], cand_vectors[provider]
        for name, old in before.items():
            new = after[name]
            if old is None or new is None:
                missing = True
            elif new > old:
                increased = True
            elif new < old:
                decreased = True
    if missing:
        return _inconclusive(VerdictReason.MISSING_TOKEN_DIMENSION)
    if increased and decreased:
        return _inconclusive(VerdictReason.TOKEN_DIMENSION_TRADEOFF)
    if increased:
        return Assessment(Verdict.REJECTED, frozenset({VerdictReason.TOKEN_PROXY_REGRESSION}))
    if not decreased:
        return _inconclusive(VerdictReason.NO_TOKEN_PROXY_REDUCTION)
    return Assessment(Verdict.SUPPORTED)
