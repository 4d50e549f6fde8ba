"""Words and numbers shared by the markdown and HTML reports: metric titles, value
formatting, short decision labels and the headline's cells. Null is ``—``, never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from pairlab.core.analysis.decisions import DECISION_WORDS, REASON_WORDS
from pairlab.core.report.headline import LABELS

METRIC_TITLES: Final = {
    "totalTokens": "total tokens",
    "uncachedInputTokens": "uncached input tokens",
    "cachedInputTokens": "cache-read input tokens",
    "cacheWrite5mTokens": "cache-write 5m tokens",
    "cacheWrite1hTokens": "cache-write 1h tokens",
    "cacheWriteTokens": "cache-write tokens",
    "outputTokens": "output tokens",
    "reasoningTokens": "reasoning tokens",
    "toolCalls": "tool calls",
    "latencyMs": "latency (ms)",
    "costUsd": "provider-reported cost (USD)",
    "apiListPriceUsd": "API list price (USD)",
    "quotaFiveHourConsumptionPct": "5-hour quota (points)",
    "quotaSevenDayConsumptionPct": "7-day quota (points)",
}
QUESTION_TITLES: Final = {
    "tokens": "Tokens",
    "cost": "API list price",
    "subscription": "Subscription quota",
    "correctness": "Correctness",
}
SHORT_REASONS: Final = {name: words.short for name, words in REASON_WORDS.items()}
NULL: Final = "—"


def metric_title(metric: str) -> str:
    return METRIC_TITLES.get(metric, metric)


def digits(metric: str | None) -> int:
    """Decimals for a metric's values: dollars need more than tokens; quota points 2."""
    if metric is None:
        return 1
    if metric.endswith("Usd"):
        return 6
    if metric.endswith("Pct"):
        return 2
    return 1


def number(value: Any, places: int = 1, *, signed: bool = False) -> str:
    if value is None:
        return NULL
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return f"{value:+,.{places}f}" if signed else f"{value:,.{places}f}"
    return str(value)


def interval(low: Any, high: Any, places: int) -> str:
    if low is None and high is None:
        return NULL
    lo = "−∞" if low is None else number(low, places)
    hi = "+∞" if high is None else number(high, places)
    return f"[{lo}, {hi}]"


def percent(value: Any) -> str:
    return NULL if value is None else f"{100 * value:.0f}%"


def decision_word(effect: Mapping[str, Any]) -> str:
    """``win``, ``regression`` or a short reason (empty when there is nothing to say)."""
    words = DECISION_WORDS.get(str(effect.get("decision")))
    if words is not None and words.word:
        return words.word
    return short_reason(effect)


# Reasons that say why an interval excluding zero did not make a win; for an increase
# the first thing to say is that it is not a saving at all (a win is always a saving).
_EITHER_DIRECTION: Final = frozenset({"adjusted-threshold", "below-gate"})


def short_reason(effect: Mapping[str, Any]) -> str:
    """Why an effect is not a win, in a table cell (empty when there is nothing to say)."""
    reason = effect.get("reason")
    if not reason:
        return ""
    text = SHORT_REASONS.get(str(reason), str(reason))
    estimate = effect.get("estimate")
    if reason in _EITHER_DIRECTION and isinstance(estimate, int | float) and estimate > 0:
        return f"an increase, not a saving ({text})"
    return text


def decision_tone(effect: Mapping[str, Any]) -> str | None:
    """The colour of an effect's decision (``win``/``regression``), None for the rest."""
    words = DECISION_WORDS.get(str(effect.get("decision")))
    return words.tone if words is not None else None


def reason_text(reason: str) -> str:
    return SHORT_REASONS.get(reason, reason)


def headline_cell(question: str, cell: Mapping[str, Any]) -> str:
    """``2 win · 1 regression · 4 no evidence`` (+ ``· 1 insufficient`` when any)."""
    words = LABELS[question]
    parts = [f"{cell.get(k, 0)} {words[k]}" for k in ("win", "regression", "noEvidence")]
    if cell.get("insufficient"):
        parts.append(f"{cell['insufficient']} insufficient")
    return " · ".join(parts)


_SENTENCE_WORDS: Final = {
    "tokens": ("fewer {metric}", "more {metric}"),
    "cost": ("a lower API list price", "a higher API list price"),
    "subscription": ("less subscription quota", "more subscription quota"),
    "correctness": ("more correct answers", "fewer correct answers"),
}


def summary_sentence(row: Mapping[str, Any]) -> str:
    """One contrast of the headline in words: what its task cohorts showed."""
    n = int(row.get("cohorts", 0))
    parts = []
    for question, (better, worse) in _SENTENCE_WORDS.items():
        cell = row.get(question, {})
        metric = str(cell.get("metric", ""))
        for key, words in (("win", better), ("regression", worse)):
            if cell.get(key):
                parts.append(f"{words.format(metric=metric)} in {cell[key]} of {n}")
    shown = "; ".join(parts) if parts else "no win and no regression shown on any question"
    cohorts = "task cohort" if n == 1 else "task cohorts"
    return f"{row.get('treatment')} vs {row.get('control')} ({n} {cohorts}): {shown}."


def reasons_text(cell: Mapping[str, Any], limit: int = 3) -> str:
    """The most frequent reasons of a headline cell: ``quota-interval-mismatch (5)``."""
    items = list(cell.get("reasons", {}).items())[:limit]
    return ", ".join(f"{reason_text(r)} ({n})" for r, n in items)


def pairs_text(verdict: Mapping[str, Any]) -> str:
    """``2 pairs, a reduction in 1 of 4 intervals`` for a subscription verdict."""
    n = int(verdict.get("pairs", 0))
    outcomes = verdict.get("intervals", {})
    total = sum(int(v) for v in outcomes.values())
    text = f"{n} pair" + ("" if n == 1 else "s")
    if total:
        text += f", a reduction in {outcomes.get('reduction', 0)} of {total} intervals"
    return text


def cohort_title(key: Mapping[str, Any]) -> str:
    extra = [] if key.get("stratum") in (None, "default") else [f"stratum {key.get('stratum')}"]
    if key.get("modelVersion") not in (None, "unknown"):
        extra.append(f"model version {key.get('modelVersion')}")
    suffix = f" ({', '.join(extra)})" if extra else ""
    return f"{key.get('taskId')}{suffix}"


def account_fact(account: Any) -> str:
    """`` · account <name> (<client> <kind> at <provider>; <what it means for quota>)`` for
    the report's facts line; empty for a run on no account (the emulator, the simulator)."""
    if not isinstance(account, Mapping):
        return ""
    from pairlab.core.accounts import AccountStamp

    return AccountStamp.model_validate(account, strict=False).fact()


def intervention_fact(intervention: Any) -> str:
    """`` · intervention <id> <version> (manifest <first 12 hex>)`` for the report's facts
    line; empty for a run that recorded none (written before issue 26)."""
    if not isinstance(intervention, Mapping):
        return ""
    sha = str(intervention.get("manifest_sha256") or "")[:12]
    return (
        f" · intervention {intervention.get('id')} {intervention.get('version')} (manifest {sha})"
    )


def scripted_model_fact(use: Any) -> str:
    """`` · scripted model: measures transport and context cost, not a model's behaviour;
    usage recipe on a, b; floor (tool definitions only) on c`` for the facts line
    (``meta.scripted_model``); empty when no scripted model played the episodes."""
    if not isinstance(use, Mapping):
        return ""
    text = " · scripted model: measures transport and context cost, not a model's behaviour"
    if use.get("builtin"):
        return text + " (the reference's tools are in its script)"
    recipe, floor = list(use.get("recipe_tasks") or []), list(use.get("floor_tasks") or [])
    if recipe:
        text += f"; usage recipe on {', '.join(recipe)}"
    if floor:
        text += f"; floor (tool definitions only) on {', '.join(floor)}"
    return text


def intervention_health_fact(health: Any) -> str:
    """`` · intervention loaded in 5 of 6 treated episodes (1 intervention-not-loaded,
    excluded)`` for the facts line (``meta.intervention_health``); empty when no treated
    episode was judged (core/intervention_health.py)."""
    if not isinstance(health, Mapping):
        return ""
    text = f" · intervention loaded in {health.get('loaded')} of {health.get('judged')} judged"
    text += f" treated episodes ({health.get('treated')} treated)"
    not_there = health.get("not_there") or {}
    if not_there:
        listed = ", ".join(f"{n} {status}" for status, n in not_there.items())
        text += f"; not there: {listed} (excluded from effects)"
    return text + _tools_fact(health.get("tools"))


def _tools_fact(tools: Any) -> str:
    """``; its tools: 12 calls, 2 errors, 1 oversized (graded as they ended)``; a count
    no episode read is ``n/a``; empty for a report written before the counts."""
    if not isinstance(tools, Mapping):
        return ""

    def count(key: str) -> str:
        value = tools.get(key)
        return NULL if value is None else str(value)

    return (
        f"; its tools: {count('calls')} calls, {count('errors')} errors, "
        f"{count('oversized')} oversized (kept, graded as they ended)"
    )


def group_title(group: Mapping[str, Any]) -> str:
    """``client version · model · intervention id@version:hash`` (the headline's group)."""
    title = f"{group.get('client')} {group.get('clientVersion')} · {group.get('model')}"
    return f"{title} · intervention {group.get('intervention', 'unknown')}"


__all__ = [
    "METRIC_TITLES",
    "NULL",
    "QUESTION_TITLES",
    "account_fact",
    "cohort_title",
    "decision_tone",
    "decision_word",
    "digits",
    "group_title",
    "headline_cell",
    "interval",
    "intervention_fact",
    "metric_title",
    "number",
    "pairs_text",
    "percent",
    "reason_text",
    "reasons_text",
    "scripted_model_fact",
    "short_reason",
    "summary_sentence",
]


def headline_table(
    rows: Sequence[Mapping[str, Any]],
    questions: Sequence[str],
    titles: Mapping[str, str],
    cell: Callable[[str, Mapping[str, Any]], str],
    reasons_heading: str,
) -> list[str]:
    """One headline group as a markdown table (a row per contrast, a cell per question),
    then the reasons behind each "no evidence" / "insufficient" cell under ``reasons_heading``."""
    lines = ["| contrast | " + " | ".join(titles[q] for q in questions) + " |"]
    lines.append("|---" * (len(questions) + 1) + "|")
    notes = []
    for row in rows:
        name = f"{row['treatment']} vs {row['control']}"
        lines.append(f"| **{name}** | " + " | ".join(cell(q, row[q]) for q in questions) + " |")
        for q in questions:
            why = reasons_text(row[q])
            if why and (row[q].get("noEvidence") or row[q].get("insufficient")):
                notes.append(f"{name}, {QUESTION_TITLES[q]}: {why}")
    lines.append("")
    if notes:
        lines += [f"{reasons_heading}:", "", *[f"- {n}" for n in notes], ""]
    return lines
