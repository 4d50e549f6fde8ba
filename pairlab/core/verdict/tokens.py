"""Token vectors (LOOM-ARTIFACT §1 relations, §4 dimensions) and the token-proxy verdict.

Compared, per provider and never across providers: Claude ``fresh_input``,
``cache_read``, ``cache_write_5m``, ``cache_write_1h``, ``output``; Codex
``fresh_input``, ``cache_read``, ``output``. The composites (input, cache
creation, resident input, thinking, total) are never compared or added; they
only have to agree with their parts (:func:`vector_problem`).

The proxy, as loom judges it: both runs need complete, measured accounting
(``missing-accounting-evidence``), non-empty vectors
(``missing-provider-token-vector``) for the same providers
(``cross-provider-transfer``) with every compared dimension known
(``missing-token-dimension``). Changes are pooled across providers: only
decreases → supported; only increases → ``token-proxy-regression``
(rejected — reported, never part of the pair verdict or the exit code); both →
``token-dimension-tradeoff``; none → ``no-token-proxy-reduction``.
"""

from __future__ import annotations

from typing import Final

from pairlab.core.verdict.artifact import (
    U64_MAX,
    AccountingProvenance,
    Provider,
    Run,
    TokenVector,
)
from pairlab.core.verdict.outcome import Assessment, Findings, Verdict
from pairlab.core.verdict.reasons import VerdictReason

R = VerdictReason
COMPARED: Final[dict[Provider, tuple[str, ...]]] = {
    Provider.CLAUDE: (
        "fresh_input_tokens",
        "cache_read_input_tokens",
        "cache_write_5m_input_tokens",
        "cache_write_1h_input_tokens",
        "output_tokens",
    ),
    Provider.CODEX: ("fresh_input_tokens", "cache_read_input_tokens", "output_tokens"),
}


def _sum(*terms: int | None) -> int | None:
    """The sum when every term is known and it fits in a u64 (loom's checked_add)."""
    if any(t is None for t in terms):
        return None
    total = sum(t for t in terms if t is not None)
    return total if total <= U64_MAX else None


def _differs(left: int | None, right: int | None) -> bool:
    return left is not None and right is not None and left != right


def vector_problem(provider: Provider, v: TokenVector) -> str | None:
    """Why a vector is invalid (a relation between known terms fails), or None."""
    thinking, output = v.thinking_output_tokens, v.output_tokens
    if thinking is not None and output is not None and thinking > output:
        return "thinking output exceeds output"
    if provider is Provider.CLAUDE:
        relations = (
            ("input = fresh input", v.input_tokens, v.fresh_input_tokens),
            (
                "fresh + cache creation + cache read = resident input",
                _sum(
                    v.fresh_input_tokens,
                    v.cache_creation_input_tokens,
                    v.cache_read_input_tokens,
                ),
                v.resident_input_tokens,
            ),
            (
                "5m + 1h cache writes = cache creation",
                _sum(v.cache_write_5m_input_tokens, v.cache_write_1h_input_tokens),
                v.cache_creation_input_tokens,
            ),
        )
    else:
        relations = (
            ("input = resident input", v.input_tokens, v.resident_input_tokens),
            (
                "fresh + cache read = input",
                _sum(v.fresh_input_tokens, v.cache_read_input_tokens),
                v.input_tokens,
            ),
            ("input + output = total", _sum(v.input_tokens, v.output_tokens), v.total_tokens),
        )
    for name, left, right in relations:
        if _differs(left, right):
            return f"{name} does not hold"
    return None


def _measured(run: Run) -> bool:
    return run.accounting_complete and run.accounting_provenance is AccountingProvenance.MEASURED


def _short(name: str) -> str:
    return name.removesuffix("_tokens").removesuffix("_input")


def assess_token_proxy(base: Run, cand: Run) -> Assessment:
    found = Findings()
    if not (_measured(base) and _measured(cand)):
        found.add(
            R.MISSING_ACCOUNTING_EVIDENCE,
            "a run's token accounting is not complete and measured "
            f"(baseline {base.accounting_provenance}, complete={base.accounting_complete}; "
            f"candidate {cand.accounting_provenance}, complete={cand.accounting_complete})",
        )
        return found.assessment(Verdict.INCONCLUSIVE)
    if not base.provider_tokens or not cand.provider_tokens:
        found.add(R.MISSING_PROVIDER_TOKEN_VECTOR, "a run has no token vector")
        return found.assessment(Verdict.INCONCLUSIVE)
    if sorted(base.provider_tokens) != sorted(cand.provider_tokens):
        found.add(
            R.CROSS_PROVIDER_TRANSFER,
            f"tokens moved between providers ({', '.join(sorted(base.provider_tokens))} → "
            f"{', '.join(sorted(cand.provider_tokens))}); vectors are never translated",
        )
        return found.assessment(Verdict.INCONCLUSIVE)
    fell: list[str] = []
    rose: list[str] = []
    for provider in sorted(base.provider_tokens):
        before, after = base.provider_tokens[provider], cand.provider_tokens[provider]
        for name in COMPARED[provider]:
            old, new = getattr(before, name), getattr(after, name)
            if old is None or new is None:
                found.add(
                    R.MISSING_TOKEN_DIMENSION,
                    f"{provider} {_short(name)} is unknown in a run (unknown is never zero)",
                )
                return found.assessment(Verdict.INCONCLUSIVE)
            if new != old:
                (fell if new < old else rose).append(f"{provider} {_short(name)} {old} → {new}")
    if rose and fell:
        found.add(R.TOKEN_DIMENSION_TRADEOFF, f"rose: {', '.join(rose)}; fell: {', '.join(fell)}")
        return found.assessment(Verdict.INCONCLUSIVE)
    if rose:
        found.add(R.TOKEN_PROXY_REGRESSION, f"rose: {', '.join(rose)}; nothing fell")
        return found.assessment(Verdict.REJECTED)
    if not fell:
        found.add(R.NO_TOKEN_PROXY_REDUCTION, "no compared dimension changed")
        return found.assessment(Verdict.INCONCLUSIVE)
    return found.assessment(Verdict.SUPPORTED, f"fell: {', '.join(fell)}; nothing rose")
