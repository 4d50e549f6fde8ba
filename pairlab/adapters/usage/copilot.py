"""Copilot CLI usage: OpenTelemetry file-export spans (JSONL).

Copilot keeps no local token ledger; with ``COPILOT_OTEL_EXPORTER_TYPE=file`` it
writes one JSON object per line (``type`` span / metric / log). Only ``chat``
spans (one LLM call each) are usage; ``invoke_agent`` spans carry the same
tokens summed over a turn (``aggregate-span``, never added). Chat spans are
deduplicated by ``gen_ai.response.id`` (else trace:span id). Following the OTel
GenAI conventions ``gen_ai.usage.input_tokens`` includes cached reads and cache
creation, which are subtracted for the uncached dimension. No 5m/1h split exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from pairlab.adapters.usage.base import (
    AGGREGATE_SPAN,
    DUPLICATE,
    MEASURED,
    NO_DEDUPE_KEY,
    UNKNOWN_USAGE,
    ReportBuilder,
    UsageReport,
    expand_paths,
    int_or_none,
    iter_json_lines,
    vector_of,
)
from pairlab.core.schemas.usage import UsageVector

PROVIDER: Final = "copilot"
_MODEL_KEYS: Final = ("gen_ai.response.model", "gen_ai.request.model")


def _first_int(attrs: dict[str, Any], *keys: str) -> int | None:
    for k in keys:
        if k in attrs:
            return int_or_none(attrs[k])
    return None


def span_vector(attrs: dict[str, Any]) -> UsageVector:
    total_in = _first_int(attrs, "gen_ai.usage.input_tokens")
    read = _first_int(attrs, "gen_ai.usage.cache_read.input_tokens")
    write = _first_int(
        attrs, "gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_write.input_tokens"
    )
    uncached = None
    if total_in is not None:
        uncached = total_in - (read or 0) - (write or 0)
        if uncached < 0:  # an exporter that reports input exclusive of cache
            uncached = total_in
    return vector_of(
        uncached_input=uncached,
        cache_read=read,
        cache_write_generic=write,
        output=_first_int(attrs, "gen_ai.usage.output_tokens"),
        reasoning=_first_int(
            attrs, "gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens"
        ),
    )


def _operation(span: dict[str, Any], attrs: dict[str, Any]) -> str:
    op = attrs.get("gen_ai.operation.name")
    if isinstance(op, str):
        return op
    name = span.get("name")
    return name.split(" ", 1)[0] if isinstance(name, str) else ""


class CopilotReader:
    provider = PROVIDER

    def read(self, paths: Sequence[Path]) -> UsageReport:
        b = ReportBuilder(provider=PROVIDER)
        kept: dict[str, tuple[int, str, UsageVector]] = {}
        keyless: list[tuple[str, UsageVector]] = []
        for path in expand_paths(paths):
            b.paths.append(str(path))
            for obj in iter_json_lines(path, b):
                if obj.get("type", "span") != "span":
                    continue
                attrs = obj.get("attributes")
                if not isinstance(attrs, dict):
                    continue
                self._identity(obj, attrs, b)
                op = _operation(obj, attrs)
                if op == "invoke_agent":
                    if any(k.startswith("gen_ai.usage.") for k in attrs):
                        b.count(AGGREGATE_SPAN)
                    continue
                if op != "chat":
                    continue
                if not any(k.startswith("gen_ai.usage.") for k in attrs):
                    b.count(UNKNOWN_USAGE)
                    continue
                vector = span_vector(attrs)
                model = next(
                    (attrs[k] for k in _MODEL_KEYS if isinstance(attrs.get(k), str)), "unknown"
                )
                rid = attrs.get("gen_ai.response.id")
                key = f"r:{rid}" if isinstance(rid, str) and rid else None
                span_id = obj.get("spanId") or obj.get("span_id")
                if key is None and isinstance(span_id, str):
                    key = f"s:{obj.get('traceId') or obj.get('trace_id')}:{span_id}"
                if key is None:
                    b.count(NO_DEDUPE_KEY)
                    keyless.append((model, vector))
                    continue
                item = (vector.output or 0, model, vector)
                if key in kept:
                    b.count(DUPLICATE)
                    if item[0] >= kept[key][0]:
                        kept[key] = item
                else:
                    kept[key] = item
        for model, vector in [(m, v) for _, m, v in kept.values()] + keyless:
            b.count(MEASURED)
            b.add_call(model, vector, is_sidechain=False)
        return b.build()

    def _identity(self, span: dict[str, Any], attrs: dict[str, Any], b: ReportBuilder) -> None:
        if b.session_id is None and isinstance(attrs.get("gen_ai.conversation.id"), str):
            b.session_id = attrs["gen_ai.conversation.id"]
        if b.cli_version is None:
            resource = span.get("resource")
            rattrs = resource.get("attributes") if isinstance(resource, dict) else None
            if isinstance(rattrs, dict) and isinstance(rattrs.get("service.version"), str):
                b.cli_version = rattrs["service.version"]
