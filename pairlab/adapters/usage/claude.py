"""Claude Code usage: transcripts (main, subagent, inline sidechain) and ``claude -p`` results.

Rules (CLIENTS.md, Claude Code):

* Only ``assistant`` lines carry ``message.usage``. One response is written as
  several lines sharing ``message.id``; some carry placeholder ``output_tokens``.
  Lines are grouped by ``message.id`` (else ``requestId``) across ALL files of
  the episode and one whole line is kept: highest ``output_tokens``, the last on
  a tie. Per-field maxima are never taken.
* ``toolUseResult.usage`` on user lines is a copy of a subagent's usage: ignored.
* ``<synthetic>`` / API-error lines are not calls; a usage-limit notice becomes
  a quota observation.
* Old lines without the 5m/1h split go to ``cache_write_generic``.
* A ``claude -p --output-format json`` result object measures the episode only
  when no transcript line does (it is a per-session summary without the split).
* A stream-json ``rate_limit_event`` (OAuth sessions) becomes quota observations,
  observed at the time of the line before it.
* Usage Claude Code counted in a session's ``cost-state`` totals but wrote on no
  assistant line (a stream cut after ``message_start``) is added as the
  ``cost-state-remainder`` (see ``claude_cost_state``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from pairlab.adapters.usage.base import (
    DUPLICATE,
    MEASURED,
    NO_DEDUPE_KEY,
    SUMMARY,
    SUMMARY_SUPERSEDED,
    SYNTHETIC_ERROR,
    TOOL_RESULT_COPY,
    UNKNOWN_USAGE,
    ReportBuilder,
    UsageReport,
    expand_paths,
    int_or_none,
    iter_json_lines,
    parse_instant,
    parse_time,
    vector_of,
)
from pairlab.adapters.usage.claude_cost_state import reconcile, sum_by_session
from pairlab.core.schemas.quota import (
    QuotaObservation,
    classify_window,
    percent_or_none,
    window_observation,
)
from pairlab.core.schemas.usage import UsageVector

PROVIDER: Final = "claude"
RATE_LIMIT_EVENT_SOURCE: Final = "claude-rate-limit-event"
_DECIMALS: Final = re.compile(r"^\s*[0-9]*\.?([0-9]*)\s*$")
SYNTHETIC_MODEL: Final = "<synthetic>"
# Lines that can matter (assistant responses, tool-result copies, result objects).
_NEEDLES: Final = (
    '"assistant"',
    '"toolUseResult"',
    '"result"',
    '"cost-state"',
    '"rate_limit_event"',
)
_LEGACY_LIMIT = re.compile(r"usage limit reached\|(\d{9,11})", re.IGNORECASE)


@dataclass(slots=True)
class _Kept:
    """The one whole line kept for a response group."""

    output: int
    model: str
    vector: UsageVector
    web_searches: int | None
    cost_usd: float | None
    is_sidechain: bool
    session_id: str | None = None


def claude_vector(usage: dict[str, Any]) -> UsageVector:
    """Anthropic usage block -> vector (input_tokens already excludes cache)."""
    total_write = int_or_none(usage.get("cache_creation_input_tokens"))
    split = usage.get("cache_creation")
    w5m = w1h = generic = None
    if isinstance(split, dict) and (
        "ephemeral_5m_input_tokens" in split or "ephemeral_1h_input_tokens" in split
    ):
        w5m = int_or_none(split.get("ephemeral_5m_input_tokens"))
        w1h = int_or_none(split.get("ephemeral_1h_input_tokens"))
        if total_write is not None:
            remainder = total_write - (w5m or 0) - (w1h or 0)
            generic = remainder if remainder > 0 else None
    else:
        generic = total_write
    reasoning = None
    details = usage.get("output_tokens_details")
    if isinstance(details, dict):
        reasoning = int_or_none(details.get("thinking_tokens"))
    return vector_of(
        uncached_input=int_or_none(usage.get("input_tokens")),
        cache_read=int_or_none(usage.get("cache_read_input_tokens")),
        cache_write_5m=w5m,
        cache_write_1h=w1h,
        cache_write_generic=generic,
        output=int_or_none(usage.get("output_tokens")),
        reasoning=reasoning,
    )


def _web_searches(usage: dict[str, Any]) -> int | None:
    server = usage.get("server_tool_use")
    if isinstance(server, dict):
        return int_or_none(server.get("web_search_requests"))
    return None


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
    return " ".join(parts)


def limit_notice_observation(text: str, observed_at: datetime | None) -> QuotaObservation | None:
    """A usage-limit notice -> an observation of an exhausted window (100 %).

    The window is the one the notice names ("weekly"/"7-day", "5-hour"/"session
    limit"); a notice that names none (the legacy ``Claude AI usage limit
    reached|<epoch>``) is recorded with no window (``other:0``, as every source that
    states no length): its reset time alone does not say which window ran out (a
    seven-day window near its end resets within five hours too)."""
    lowered = text.lower()
    if "limit" not in lowered or observed_at is None:
        return None
    if not any(k in lowered for k in ("limit reached", "hit your", "limit exceeded")):
        return None
    resets_at = None
    match = _LEGACY_LIMIT.search(text)
    if match:
        resets_at = parse_time(int(match.group(1)))
    if "week" in lowered or "7-day" in lowered:
        window = "seven-day"
    elif "5-hour" in lowered or "session limit" in lowered:
        window = "five-hour"
    else:
        window = "other:0"
    return QuotaObservation(
        provider=PROVIDER,
        window=window,
        used_percent=100.0,
        source_scale="percent",
        precision_percent=None,
        resets_at=resets_at,
        reset_id=resets_at.isoformat() if resets_at else None,
        observed_at=observed_at,
        source="claude-transcript:usage-limit-notice",
    )


# --- quota observations in Claude's own output -------------------------------------


# Claude's window keys (OAuth usage endpoint, status line, rate_limit_event) -> minutes
_WINDOW_MINUTES: Final = {"five_hour": 300, "seven_day": 10080}


def claude_provider(scope: str | None) -> str:
    """A model-scoped window (``seven_day_opus``) is its own provider, ``claude:opus``."""
    return f"claude:{scope}" if scope else "claude"


def claude_window(key: str) -> tuple[str, str] | None:
    """(window, provider) from a response key, classified by the key's window length."""
    for prefix, minutes in _WINDOW_MINUTES.items():
        if key == prefix or key.startswith(prefix + "_"):
            scope = key[len(prefix) + 1 :] or None
            return classify_window(minutes), claude_provider(scope)
    return None


def fraction_percent(text: str) -> tuple[float | None, float | None]:
    """(percent, precision in points) of a 0-1 fraction written as text."""
    try:
        fraction = float(text)
    except ValueError:
        return None, None
    pct = percent_or_none(fraction, scale=100.0)
    if pct is None:
        return None, None
    match = _DECIMALS.match(text)
    decimals = len(match.group(1)) if match else 0
    # A fraction with up to 2 decimals is a whole percentage point (trailing zeros may
    # have been dropped: "0.2" is 20 %); more decimals are finer.
    places = max(decimals - 2, 0)
    return round(pct, places), 10.0**-places


def rate_limit_event_observations(event: object, observed_at: datetime) -> list[QuotaObservation]:
    """Observations from a stream-json ``rate_limit_event`` (empty when it has no windows).

    The line Claude Code's ``--output-format stream-json`` prints under an OAuth token
    (2.1.332 measured): ``rate_limit_info.unifiedWindows.{five_hour,seven_day}.{utilization
    (fraction 0-1, as the unified header gave it), resetsAt (epoch s)}``. The line has no
    timestamp: the caller passes the time of the line before it. Windows are the OAuth
    usage endpoint's keys (``claude_window``); an out-of-range value is unknown (None).

    The utilization is the unified header's fraction, so its precision is the header's
    (whole percentage points for up to 2 decimals)."""
    info = event.get("rate_limit_info") if isinstance(event, dict) else None
    windows = info.get("unifiedWindows") if isinstance(info, dict) else None
    if not isinstance(windows, dict):
        return []
    out = []
    for key, value in sorted(windows.items()):
        classified = claude_window(key)
        if classified is None or not isinstance(value, dict):
            continue
        raw = value.get("utilization")
        used, precision = (None, None)
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            used, precision = fraction_percent(repr(float(raw)))
        window, provider = classified
        out.append(
            window_observation(
                provider=provider,
                window=window,
                used=used,
                resets_at=parse_instant(value.get("resetsAt")),
                observed_at=observed_at,
                source=RATE_LIMIT_EVENT_SOURCE,
                source_scale="fraction",
                precision=precision,
            )
        )
    return out


class ClaudeReader:
    provider = PROVIDER

    def read(self, paths: Sequence[Path]) -> UsageReport:
        b = ReportBuilder(provider=PROVIDER)
        kept: dict[str, _Kept] = {}
        keyless: list[_Kept] = []
        results: dict[str, dict[str, Any]] = {}
        cost_states: dict[str, dict[str, Any]] = {}
        last_time: datetime | None = None  # a rate_limit_event line has no time of its own
        for path in expand_paths(paths):
            b.paths.append(str(path))
            for obj in iter_json_lines(path, b, _NEEDLES):
                kind = obj.get("type")
                if kind == "assistant":
                    self._assistant(obj, b, kept, keyless)
                elif kind == "user":
                    tur = obj.get("toolUseResult")
                    if isinstance(tur, dict) and isinstance(tur.get("usage"), dict):
                        b.count(TOOL_RESULT_COPY)
                elif kind == "result":
                    sid = obj.get("session_id")
                    results[sid if isinstance(sid, str) else f"#{len(results)}"] = obj
                elif kind == "cost-state" and isinstance(obj.get("sessionId"), str):
                    cost_states[obj["sessionId"]] = obj  # cumulative: the last one wins
                elif kind == "rate_limit_event" and last_time is not None:
                    b.add_quota(rate_limit_event_observations(obj, last_time))
                last_time = parse_time(obj.get("timestamp")) or last_time
                if b.cli_version is None and isinstance(obj.get("version"), str):
                    b.cli_version = obj["version"]
                if b.session_id is None and not obj.get("isSidechain"):
                    sid = obj.get("sessionId") or obj.get("session_id")
                    if isinstance(sid, str) and sid:
                        b.session_id = sid
        for item in [*kept.values(), *keyless]:
            b.count(MEASURED)
            b.add_call(item.model, item.vector, is_sidechain=item.is_sidechain)
            b.add_web_searches(item.web_searches)
            b.add_cost(item.cost_usd)
        if cost_states:
            items = [*kept.values(), *keyless]
            lines = sum_by_session((i.session_id, i.model, i.vector) for i in items)
            reconcile(cost_states, lines, b)
        self._results(results.values(), b, has_transcript=bool(kept or keyless))
        return b.build()

    def _assistant(
        self,
        obj: dict[str, Any],
        b: ReportBuilder,
        kept: dict[str, _Kept],
        keyless: list[_Kept],
    ) -> None:
        message = obj.get("message")
        if not isinstance(message, dict):
            b.count(UNKNOWN_USAGE)
            return
        model = message.get("model")
        if model == SYNTHETIC_MODEL or obj.get("isApiErrorMessage"):
            b.count(SYNTHETIC_ERROR)
            obs = limit_notice_observation(_text_of(message), parse_time(obj.get("timestamp")))
            if obs is not None:
                b.add_quota([obs])
            return
        usage = message.get("usage")
        if not isinstance(usage, dict):
            b.count(UNKNOWN_USAGE)
            return
        vector = claude_vector(usage)
        cost = obj.get("costUSD")
        item = _Kept(
            output=vector.output or 0,
            model=model if isinstance(model, str) and model else "unknown",
            vector=vector,
            web_searches=_web_searches(usage),
            cost_usd=float(cost) if isinstance(cost, int | float) else None,
            is_sidechain=bool(obj.get("isSidechain")),
            session_id=obj.get("sessionId") if isinstance(obj.get("sessionId"), str) else None,
        )
        mid, rid = message.get("id"), obj.get("requestId")
        key = f"m:{mid}" if isinstance(mid, str) and mid else None
        if key is None and isinstance(rid, str) and rid:
            key = f"r:{rid}"
        if key is None:
            b.count(NO_DEDUPE_KEY)
            keyless.append(item)
            return
        previous = kept.get(key)
        if previous is None:
            kept[key] = item
            return
        b.count(DUPLICATE)
        # A response is a sidechain's only if every copy of it is (replays belong to the parent).
        sidechain = previous.is_sidechain and item.is_sidechain
        chosen = item if item.output >= previous.output else previous
        chosen.is_sidechain = sidechain
        kept[key] = chosen

    def _results(
        self, results: Iterable[dict[str, Any]], b: ReportBuilder, *, has_transcript: bool
    ) -> None:
        result_cost: float | None = None
        for res in results:
            cost = res.get("total_cost_usd")
            if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0:
                result_cost = (result_cost or 0.0) + float(cost)
            if b.session_id is None and isinstance(res.get("session_id"), str):
                b.session_id = res["session_id"]
            if has_transcript:
                b.count(SUMMARY_SUPERSEDED)
                continue
            b.count(SUMMARY)
            model_usage = res.get("modelUsage")
            if isinstance(model_usage, dict) and model_usage:
                for model, mu in model_usage.items():
                    if not isinstance(mu, dict):
                        continue
                    b.add_call(str(model), _model_usage_vector(mu), is_sidechain=False, calls=None)
                    b.add_web_searches(int_or_none(mu.get("webSearchRequests")))
            elif isinstance(res.get("usage"), dict):
                usage = res["usage"]
                b.add_call("unknown", claude_vector(usage), is_sidechain=False, calls=None)
                b.add_web_searches(_web_searches(usage))
            else:
                b.count(UNKNOWN_USAGE)
        if result_cost is not None:
            # The session's own estimate covers the same calls as per-line costUSD: it wins.
            b.cost_usd = result_cost


def _model_usage_vector(mu: dict[str, Any]) -> UsageVector:
    """``modelUsage`` entries carry no 5m/1h split: writes are generic."""
    return vector_of(
        uncached_input=int_or_none(mu.get("inputTokens")),
        cache_read=int_or_none(mu.get("cacheReadInputTokens")),
        cache_write_generic=int_or_none(mu.get("cacheCreationInputTokens")),
        output=int_or_none(mu.get("outputTokens")),
    )
