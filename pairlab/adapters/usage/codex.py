"""Codex CLI usage: rollouts (``.jsonl`` / ``.jsonl.zst``) and the ``codex exec --json`` stream.

Rules (CLIENTS.md, Codex CLI):

* ``token_count.info.total_token_usage`` is cumulative. New usage only when it
  changes: delta = new total - previous total. Re-emitted snapshots are
  duplicates. A decreasing total is a reset (the new total counts from zero).
* A forked or subagent rollout opens by copying the parent's history, re-stamped
  to the fork instant, in one burst: snapshots in that burst set the baseline and
  are not usage (``replay``).
* Each delta is attributed to the latest ``turn_context.model``.
* Older versions lack ``cache_write_input_tokens``: cache writes stay null.
* ``rate_limits`` in both formats (absolute ``resets_at``; older relative
  ``resets_in_seconds`` with 299/10079-minute windows) become quota observations.
* ``codex exec --json``: ``turn.completed.usage`` is the thread's cumulative
  usage: the last one per thread counts, never the sum. Rollouts supersede it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

from pairlab.adapters.usage.base import (
    DUPLICATE,
    DUPLICATE_FILE,
    MEASURED,
    REPLAY,
    RESET,
    SUMMARY,
    SUMMARY_SUPERSEDED,
    UNKNOWN_USAGE,
    ReportBuilder,
    UsageReport,
    expand_paths,
    int_or_none,
    iter_json_lines,
    parse_instant,
    parse_time,
    sub_nullable,
    vector_of,
)
from pairlab.core.schemas.quota import (
    QuotaObservation,
    classify_window,
    percent_or_none,
    window_observation,
)
from pairlab.core.schemas.usage import UsageVector

PROVIDER: Final = "codex"
# The copied history of a fork is written in one burst; a real turn takes longer.
FORK_BURST_S: Final = 1.0
_TOTAL_FIELDS: Final = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
)
_EXEC_EVENTS: Final = ("thread.", "turn.", "item.")
# Lines that can matter; response items (most of a rollout's bytes) are skipped unparsed.
_NEEDLES: Final = (
    '"session_meta"',
    '"turn_context"',
    '"token_count"',
    '"thread.started"',
    '"turn.completed"',
)

Totals = dict[str, int | None]


def codex_vector(t: Totals) -> UsageVector:
    """OpenAI totals -> vector: input includes cached reads (and cache writes when reported)."""
    cached = t.get("cached_input_tokens")
    write = t.get("cache_write_input_tokens")
    return vector_of(
        uncached_input=sub_nullable(sub_nullable(t.get("input_tokens"), cached), write),
        cache_read=cached,
        cache_write_generic=write,
        output=t.get("output_tokens"),
        reasoning=t.get("reasoning_output_tokens"),
    )


def _totals(raw: dict[str, Any]) -> Totals:
    return {f: int_or_none(raw[f]) if f in raw else None for f in _TOTAL_FIELDS}


def _delta(new: Totals, old: Totals | None) -> tuple[Totals, bool]:
    """(delta, is_reset). A total lower than before in any field is a reset."""
    if old is None:
        return dict(new), False
    if any((new[f] or 0) < (old[f] or 0) for f in _TOTAL_FIELDS if new[f] is not None):
        return dict(new), True
    return {f: sub_nullable(new[f], old[f]) for f in _TOTAL_FIELDS}, False


def limit_provider(limit_id: object) -> str:
    """The account-wide limit (no ``limit_id``, or ``codex``) is provider ``codex``; another
    limit bucket (a per-model or per-feature limit) is its own provider ``codex:<limit_id>``,
    so its windows never pass for the account's."""
    if not isinstance(limit_id, str) or limit_id in ("", PROVIDER):
        return PROVIDER
    return f"{PROVIDER}:{limit_id}"


def rate_limit_observations(
    rate_limits: dict[str, Any], observed_at: datetime, source: str
) -> list[QuotaObservation]:
    """Both rate_limits formats -> observations, windows classified by length; a reset time
    is an absolute instant (epoch seconds, or text with an offset) or unknown."""
    provider = limit_provider(rate_limits.get("limit_id"))
    out: list[QuotaObservation] = []
    slots: list[tuple[dict[str, Any], str]] = []
    for slot in ("primary", "secondary"):
        raw = rate_limits.get(slot)
        if isinstance(raw, dict):
            slots.append((raw, slot))
        elif f"{slot}_used_percent" in rate_limits:  # oldest flat format, no reset time
            slots.append(
                (
                    {
                        "used_percent": rate_limits.get(f"{slot}_used_percent"),
                        "window_minutes": rate_limits.get(f"{slot}_window_minutes"),
                    },
                    slot,
                )
            )
    for raw, _slot in slots:
        used_f = percent_or_none(raw.get("used_percent"))
        minutes = raw.get("window_minutes")
        minutes_f = float(minutes) if isinstance(minutes, int | float) else None
        resets_at = parse_instant(raw.get("resets_at"))
        if resets_at is None and isinstance(raw.get("resets_in_seconds"), int | float):
            # Relative to the line time: round to the minute so repeated observations of
            # one window agree on its reset instant despite write jitter.
            exact = observed_at + timedelta(seconds=float(raw["resets_in_seconds"]))
            resets_at = (exact + timedelta(seconds=30)).replace(second=0, microsecond=0)
        out.append(
            window_observation(
                provider=provider,
                window=classify_window(minutes_f),
                used=used_f,
                resets_at=resets_at,
                observed_at=observed_at,
                source=source,
            )
        )
    return out


@dataclass
class _FileState:
    path: Path
    session_id: str | None = None
    meta_time: datetime | None = None
    is_fork: bool = False
    is_subagent: bool = False
    in_burst: bool = False
    model: str = "unknown"
    previous: Totals | None = None
    seen_meta: bool = False
    last_rate_limits: dict[str, Any] | None = None
    exec_usage: dict[str, Totals] = field(default_factory=dict)


def _is_subagent_source(source: object) -> bool:
    return isinstance(source, dict) and "subagent" in source


class CodexReader:
    provider = PROVIDER

    def read(self, paths: Sequence[Path]) -> UsageReport:
        b = ReportBuilder(provider=PROVIDER)
        sessions_seen: set[str] = set()
        exec_totals: list[tuple[Totals, bool]] = []
        rollout_measured = False
        for path in expand_paths(paths):
            b.paths.append(str(path))
            st = _FileState(path=path)
            skip = False
            for obj in iter_json_lines(path, b, _NEEDLES):
                if "payload" in obj:
                    if not st.seen_meta and obj.get("type") == "session_meta":
                        skip = self._meta(obj, st, b, sessions_seen)
                    if skip:
                        continue
                    rollout_measured |= self._rollout_line(obj, st, b)
                elif isinstance(obj.get("type"), str) and obj["type"].startswith(_EXEC_EVENTS):
                    self._exec_line(obj, st, b)
            if skip:
                b.count(DUPLICATE_FILE)
                b.note(f"{path}: same session as an earlier file, skipped")
            exec_totals.extend((t, st.is_subagent) for t in st.exec_usage.values())
        for totals, is_sub in exec_totals:
            if rollout_measured:
                b.count(SUMMARY_SUPERSEDED)
                continue
            b.count(SUMMARY)
            b.add_call("unknown", codex_vector(totals), is_sidechain=is_sub, calls=None)
        return b.build()

    def _meta(
        self, obj: dict[str, Any], st: _FileState, b: ReportBuilder, sessions_seen: set[str]
    ) -> bool:
        """First session_meta of a file: the file's own identity. True = skip file."""
        st.seen_meta = True
        p = obj["payload"] if isinstance(obj["payload"], dict) else {}
        sid = p.get("id") or p.get("session_id")
        st.session_id = sid if isinstance(sid, str) else None
        st.meta_time = parse_time(obj.get("timestamp")) or parse_time(p.get("timestamp"))
        st.is_subagent = _is_subagent_source(p.get("source")) or bool(p.get("parent_thread_id"))
        st.is_fork = bool(p.get("forked_from_id")) or st.is_subagent
        st.in_burst = st.is_fork and st.meta_time is not None
        if isinstance(p.get("cli_version"), str) and b.cli_version is None:
            b.cli_version = p["cli_version"]
        if st.session_id is not None:
            if st.session_id in sessions_seen:
                return True
            sessions_seen.add(st.session_id)
            if b.session_id is None and not st.is_subagent:
                b.session_id = st.session_id
        return False

    def _rollout_line(self, obj: dict[str, Any], st: _FileState, b: ReportBuilder) -> bool:
        kind = obj.get("type")
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            return False
        ts = parse_time(obj.get("timestamp"))
        if st.in_burst and (
            ts is None or st.meta_time is None or (ts - st.meta_time).total_seconds() > FORK_BURST_S
        ):
            st.in_burst = False  # suppression never restarts
        if kind == "turn_context":
            if isinstance(payload.get("model"), str) and payload["model"]:
                st.model = payload["model"]
            return False
        if kind != "event_msg" or payload.get("type") != "token_count":
            return False
        info = payload.get("info")
        rate_limits = payload.get("rate_limits")
        if (
            isinstance(rate_limits, dict)
            and ts is not None
            and not st.in_burst
            and rate_limits != st.last_rate_limits  # re-emitted snapshots repeat them verbatim
        ):
            st.last_rate_limits = rate_limits
            b.add_quota(rate_limit_observations(rate_limits, ts, "codex-rollout:token_count"))
        if not isinstance(info, dict) or not isinstance(info.get("total_token_usage"), dict):
            if info is not None:
                b.count(UNKNOWN_USAGE)
            return False
        total = _totals(info["total_token_usage"])
        if st.in_burst:
            b.count(REPLAY)
            st.previous = total
            return False
        if st.previous is not None and total == st.previous:
            b.count(DUPLICATE)
            return False
        delta, is_reset = _delta(total, st.previous)
        st.previous = total
        if is_reset:
            b.count(RESET)
        b.count(MEASURED)
        b.add_call(st.model, codex_vector(delta), is_sidechain=st.is_subagent)
        return True

    def _exec_line(self, obj: dict[str, Any], st: _FileState, b: ReportBuilder) -> None:
        kind = obj["type"]
        if kind == "thread.started":
            tid = obj.get("thread_id")
            if isinstance(tid, str):
                st.session_id = tid
                if b.session_id is None:
                    b.session_id = tid
        elif kind == "turn.completed":
            usage = obj.get("usage")
            if isinstance(usage, dict):
                # Cumulative for the thread: replace, never add.
                st.exec_usage[st.session_id or "unknown"] = _totals(usage)
            else:
                b.count(UNKNOWN_USAGE)
