"""Gemini CLI usage: ``--output-format json`` output and chat session files.

* json output: ``stats.models[<model>].tokens{prompt, candidates, cached, thoughts,
  tool}`` and ``api.totalRequests``; ``roles`` is a breakdown of the same usage and
  is never added.
* session files (``~/.gemini/tmp/<project>/chats/session-*.json``, or JSONL with one
  message per line): ``messages[].tokens{input, output, cached, thoughts, tool}``
  on ``gemini`` messages, deduplicated by message id across files. They are
  per-call and keep thoughts and tool tokens, so they supersede the json summary.
* Prompt totals include cached input: uncached = prompt - cached + tool;
  output = candidates + thoughts; reasoning = thoughts (informational).
* Gemini sources turn missing fields into 0, so zeros are weak evidence: records
  reporting a zero are counted under ``weak-zero``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from pairlab.adapters.usage.base import (
    DUPLICATE,
    MALFORMED_LINE,
    MEASURED,
    SUMMARY,
    SUMMARY_SUPERSEDED,
    UNKNOWN_USAGE,
    WEAK_ZERO,
    ReportBuilder,
    UsageReport,
    expand_paths,
    int_or_none,
    iter_json_lines,
    load_document,
    open_text,
    vector_of,
)
from pairlab.core.schemas.usage import UsageVector

PROVIDER: Final = "gemini"


def _gemini_vector(
    prompt: int | None, cached: int | None, tool: int | None, out: int | None, thoughts: int | None
) -> UsageVector:
    uncached = None if prompt is None else prompt - (cached or 0) + (tool or 0)
    output = None if out is None and thoughts is None else (out or 0) + (thoughts or 0)
    return vector_of(uncached_input=uncached, cache_read=cached, output=output, reasoning=thoughts)


def stats_vector(tokens: dict[str, Any]) -> UsageVector:
    """``stats.models[m].tokens`` of the json output."""
    return _gemini_vector(
        int_or_none(tokens.get("prompt")),
        int_or_none(tokens.get("cached")),
        int_or_none(tokens.get("tool")),
        int_or_none(tokens.get("candidates")),
        int_or_none(tokens.get("thoughts")),
    )


def message_vector(tokens: dict[str, Any]) -> UsageVector:
    """``messages[].tokens`` of a session file (input = prompt, output = candidates)."""
    return _gemini_vector(
        int_or_none(tokens.get("input")),
        int_or_none(tokens.get("cached")),
        int_or_none(tokens.get("tool")),
        int_or_none(tokens.get("output")),
        int_or_none(tokens.get("thoughts")),
    )


def _has_zero(tokens: dict[str, Any]) -> bool:
    return any(int_or_none(v) == 0 for v in tokens.values())


def _is_jsonl(path: Path) -> bool:
    """A file whose first non-empty line is a complete JSON object is JSONL."""
    try:
        with open_text(path) as handle:
            for line in handle:
                if line.strip():
                    try:
                        return isinstance(json.loads(line), dict)
                    except ValueError:
                        return False
    except Exception:
        return False
    return False


class GeminiReader:
    provider = PROVIDER

    def read(self, paths: Sequence[Path]) -> UsageReport:
        b = ReportBuilder(provider=PROVIDER)
        messages: dict[str, tuple[str, dict[str, Any]]] = {}
        keyless: list[tuple[str, dict[str, Any]]] = []
        summaries: list[dict[str, Any]] = []
        for path in expand_paths(paths):
            b.paths.append(str(path))
            if _is_jsonl(path):
                objs: Any = iter_json_lines(path, b)
            else:
                doc = load_document(path, b)
                objs = [doc] if isinstance(doc, dict) else []
                if doc is not None and not isinstance(doc, dict):
                    b.count(MALFORMED_LINE)
            for obj in objs:
                self._object(obj, b, messages, keyless, summaries)
        for model, tokens in [*messages.values(), *keyless]:
            b.count(MEASURED)
            if _has_zero(tokens):
                b.count(WEAK_ZERO)
            b.add_call(model, message_vector(tokens), is_sidechain=False)
        for stats in summaries:
            if messages or keyless:
                b.count(SUMMARY_SUPERSEDED)
                continue
            self._summary(stats, b)
        return b.build()

    def _object(
        self,
        obj: dict[str, Any],
        b: ReportBuilder,
        messages: dict[str, tuple[str, dict[str, Any]]],
        keyless: list[tuple[str, dict[str, Any]]],
        summaries: list[dict[str, Any]],
    ) -> None:
        sid = obj.get("session_id") or obj.get("sessionId")
        if b.session_id is None and isinstance(sid, str):
            b.session_id = sid
        if isinstance(obj.get("stats"), dict):
            summaries.append(obj["stats"])
        records = obj["messages"] if isinstance(obj.get("messages"), list) else [obj]
        for msg in records:
            if not isinstance(msg, dict) or msg.get("type") not in ("gemini", "model"):
                continue
            tokens = msg.get("tokens")
            if not isinstance(tokens, dict):
                b.count(UNKNOWN_USAGE)
                continue
            raw_model = msg.get("model")
            model = raw_model if isinstance(raw_model, str) and raw_model else "unknown"
            mid = msg.get("id")
            if not isinstance(mid, str) or not mid:
                keyless.append((model, tokens))
            elif mid in messages:
                b.count(DUPLICATE)
                messages[mid] = (model, tokens)  # the later copy of a rewritten file wins
            else:
                messages[mid] = (model, tokens)

    def _summary(self, stats: dict[str, Any], b: ReportBuilder) -> None:
        models = stats.get("models")
        if not isinstance(models, dict) or not models:
            b.count(UNKNOWN_USAGE)
            return
        for model, entry in models.items():
            if not isinstance(entry, dict) or not isinstance(entry.get("tokens"), dict):
                b.count(UNKNOWN_USAGE)
                continue
            tokens = entry["tokens"]  # the model's total; entry["roles"] only breaks it down
            api = entry.get("api")
            calls = int_or_none(api.get("totalRequests")) if isinstance(api, dict) else None
            b.count(SUMMARY)
            if _has_zero(tokens):
                b.count(WEAK_ZERO)
            b.add_call(str(model), stats_vector(tokens), is_sidechain=False, calls=calls)
