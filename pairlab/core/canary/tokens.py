"""A run's usage as loom's token vector and accounting (LOOM-ARTIFACT §1, §4).

pairlab's readers give one normalised :class:`UsageVector` per episode
(CLIENTS.md); loom's artifact wants its provider's ten dimensions. Mapping:

| loom dimension | Claude | Codex |
| --- | --- | --- |
| fresh_input | uncached input | input − cached (= uncached + cache writes when reported) |
| input | = fresh | fresh + cached |
| cache_read | cache read | cached input |
| cache_write_5m / _1h | the 5m / 1h writes; null when the reader saw writes without that split | null |
| cache_creation | all cache writes | null |
| resident_input | fresh + creation + read | = input |
| output | output | output |
| thinking_output | reasoning (null if larger than output) | reasoning (null if larger than output) |
| total | null (loom never states it for Claude) | input + output |

Every composite is null unless all its parts are known: unknown is never zero.

Accounting, from the reader's provenance labels (record classes): ``measured``
and complete when per-request rows were measured and no row class says usage
went unmeasured; ``partial`` when something was measured but some rows were
unknown, unreadable, malformed, keyless, weak zeros, aggregate spans or a
per-session summary (loom: only canonical per-request rows are measurements);
``unknown`` when nothing was measured.
"""

from __future__ import annotations

from typing import Final

from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.usage import UsageVector
from pairlab.core.verdict.artifact import AccountingProvenance, Provider

# reader record classes that mean some usage was not measured row by row
NOT_MEASURED_LABELS: Final = frozenset(
    {
        "unknown-usage",
        "malformed-line",
        "unreadable-file",
        "no-dedupe-key",
        "weak-zero",
        "aggregate-span",
        "summary",
    }
)


def loom_provider(name: str) -> Provider:
    """The artifact's provider for a usage reader; loom's schema knows claude and codex only."""
    try:
        return Provider(name)
    except ValueError:
        raise InvalidInputError(
            f"provider {name!r} cannot be written to loom's version-1 artifact, which "
            "knows only 'claude' and 'codex'",
            reason=ReasonCode.INVALID_INPUT,
        ) from None


def _sum(*terms: int | None) -> int | None:
    if any(t is None for t in terms):
        return None
    return sum(t for t in terms if t is not None)


def _thinking(reasoning: int | None, output: int | None) -> int | None:
    if reasoning is not None and output is not None and reasoning > output:
        return None
    return reasoning


def loom_vector(provider: Provider, usage: UsageVector) -> dict[str, int | None]:
    """loom's ten dimensions for one provider's usage (see the module's table)."""
    if provider is Provider.CLAUDE:
        fresh, read = usage.uncached_input, usage.cache_read
        creation = usage.cache_write_total
        split = not usage.cache_write_generic  # writes without a 5m/1h split: split unknown
        return {
            "input_tokens": fresh,
            "fresh_input_tokens": fresh,
            "cache_creation_input_tokens": creation,
            "cache_read_input_tokens": read,
            "cache_write_5m_input_tokens": usage.cache_write_5m if split else None,
            "cache_write_1h_input_tokens": usage.cache_write_1h if split else None,
            "output_tokens": usage.output,
            "thinking_output_tokens": _thinking(usage.reasoning, usage.output),
            "resident_input_tokens": _sum(fresh, creation, read),
            "total_tokens": None,
        }
    fresh = usage.uncached_input
    if fresh is not None and usage.cache_write_generic is not None:
        fresh += usage.cache_write_generic  # loom's fresh input is input minus cached reads
    total_input = _sum(fresh, usage.cache_read)
    return {
        "input_tokens": total_input,
        "fresh_input_tokens": fresh,
        "cache_creation_input_tokens": None,
        "cache_read_input_tokens": usage.cache_read,
        "cache_write_5m_input_tokens": None,
        "cache_write_1h_input_tokens": None,
        "output_tokens": usage.output,
        "thinking_output_tokens": _thinking(usage.reasoning, usage.output),
        "resident_input_tokens": total_input,
        "total_tokens": _sum(total_input, usage.output),
    }


def accounting(
    usage: UsageVector | None, labels: dict[str, int] | None
) -> tuple[bool, AccountingProvenance]:
    """(accounting_complete, accounting_provenance) from the reader's provenance labels."""
    if usage is None or usage.is_empty() or not labels:
        return False, AccountingProvenance.UNKNOWN
    unmeasured = any(labels.get(label, 0) > 0 for label in NOT_MEASURED_LABELS)
    if labels.get("measured", 0) > 0 and not unmeasured:
        return True, AccountingProvenance.MEASURED
    return False, AccountingProvenance.PARTIAL
