"""Claude Code's ``cost-state`` transcript lines: its own running usage totals per session.

Newer Claude Code versions (2.1.332 measured) write
``{"type": "cost-state", "sessionId", "modelUsage": {model: {inputTokens, outputTokens,
thinkingTokens, cacheReadInputTokens, cacheCreationInputTokens,
cacheCreationEphemeral5mInputTokens, cacheCreationEphemeral1hInputTokens}}}``,
cumulative for the session (the last line is the total).

Some usage reaches those totals but no assistant line: a response whose stream broke
after ``message_start`` stated (and was billed for) its input usage, yet no content
block completed, so nothing was written for it; Claude Code then retries the turn.
When a session's totals exceed what its deduplicated assistant lines add up to -- in
no dimension less, in some more -- the difference is that unwritten usage, added as
``cost-state-remainder`` (no API call counted). Totals *below* the lines (a stale or
partial cost-state) change nothing and are counted as ``cost-state-below-transcript``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from pairlab.adapters.usage.base import ReportBuilder, int_or_none, vector_of
from pairlab.core.schemas.usage import USAGE_DIMENSIONS, UsageVector

REMAINDER: Final = "cost-state-remainder"
BELOW_TRANSCRIPT: Final = "cost-state-below-transcript"


def cost_state_vector(mu: Mapping[str, Any]) -> UsageVector:
    """One model's ``modelUsage`` entry of a cost-state line -> vector."""
    total_write = int_or_none(mu.get("cacheCreationInputTokens"))
    w5m = int_or_none(mu.get("cacheCreationEphemeral5mInputTokens"))
    w1h = int_or_none(mu.get("cacheCreationEphemeral1hInputTokens"))
    generic = None
    if total_write is not None:
        rest = total_write - (w5m or 0) - (w1h or 0)
        generic = rest if rest > 0 else None
    return vector_of(
        uncached_input=int_or_none(mu.get("inputTokens")),
        cache_read=int_or_none(mu.get("cacheReadInputTokens")),
        cache_write_5m=w5m,
        cache_write_1h=w1h,
        cache_write_generic=generic,
        output=int_or_none(mu.get("outputTokens")),
        reasoning=int_or_none(mu.get("thinkingTokens")),
    )


def remainder(totals: UsageVector, lines: UsageVector) -> UsageVector | None:
    """``totals - lines`` when no dimension is below and some is above, else None.

    A dimension without a difference stays null in the remainder, so adding it never
    turns an unobserved dimension into an observed zero."""
    diff: dict[str, int | None] = {}
    for dim in USAGE_DIMENSIONS:
        total, seen = getattr(totals, dim), getattr(lines, dim)
        if total is None:
            diff[dim] = None
            continue
        delta = total - (seen or 0)
        if delta < 0:
            return None
        diff[dim] = delta or None
    if all(v is None for v in diff.values()):
        return None
    return UsageVector(**diff)


def reconcile(
    cost_states: Mapping[str, Mapping[str, Any]],
    lines_by_session: Mapping[str, Mapping[str, UsageVector]],
    b: ReportBuilder,
) -> None:
    """Add each session's cost-state remainder per model (see the module docstring)."""
    for session, line in sorted(cost_states.items()):
        model_usage = line.get("modelUsage")
        if not isinstance(model_usage, dict):
            continue
        seen = lines_by_session.get(session, {})
        for model, mu in sorted(model_usage.items()):
            if not isinstance(mu, dict):
                continue
            totals = cost_state_vector(mu)
            lines = seen.get(model, UsageVector())
            extra = remainder(totals, lines)
            if extra is not None:
                b.count(REMAINDER)
                b.add_call(str(model), extra, is_sidechain=False, calls=None)
            elif _any_below(totals, lines):
                b.count(BELOW_TRANSCRIPT)
                b.note(f"cost-state of session {session} is below its transcript lines for {model}")


def _any_below(totals: UsageVector, lines: UsageVector) -> bool:
    return any(
        getattr(totals, d) is not None and getattr(totals, d) < (getattr(lines, d) or 0)
        for d in USAGE_DIMENSIONS
    )


def sum_by_session(
    items: Iterable[tuple[str | None, str, UsageVector]],
) -> dict[str, dict[str, UsageVector]]:
    """(session, model, vector) of kept lines -> per session, per model sums."""
    out: dict[str, dict[str, UsageVector]] = {}
    for session, model, vector in items:
        if session is None:
            continue
        per_model = out.setdefault(session, {})
        per_model[model] = per_model.get(model, UsageVector()) + vector
    return out


__all__ = [
    "BELOW_TRANSCRIPT",
    "REMAINDER",
    "cost_state_vector",
    "reconcile",
    "remainder",
    "sum_by_session",
]
