"""The usage a model response states: the last step of how the emulator computes usage.

The input side is computed before: ``prompt_blocks`` cuts the request into counted
blocks, ``prompt_cache`` splits their tokens into uncached, cache read and cache
writes (:class:`CacheUsage`). Here the response's usage object is assembled, one
rule for both providers:

* **Output** tokens are ``max(1, sum(count(text)))`` over the texts the model
  produced in the answer (:func:`produced_texts`): a text block's or message's text, a
  reasoning summary's text, a tool call's arguments as they are written on the wire
  (Anthropic ``tool_use`` input and OpenAI ``function_call`` arguments as
  :func:`arguments_text`, a custom tool call's raw input). Ids, names, types, statuses
  and every other envelope field are not counted, so the same answer states the same
  output tokens whatever ids were minted (deterministic for the same seed). A response
  never states 0 output tokens.
* **Reasoning** (OpenAI): the same count over the ``reasoning`` items alone, stated in
  ``output_tokens_details.reasoning_tokens`` (part of the output, as at OpenAI).
  Anthropic states no thinking unless the client sent the ``thinking-token-count``
  beta header; then ``output_tokens_details.thinking_tokens`` is 0 (the scripted
  model does not think: a known zero, not an unknown).
* **Input**, Anthropic: ``input_tokens`` is the uncached part; cache reads and the
  5-minute / 1-hour writes are stated apart. OpenAI: ``input_tokens`` is the whole
  input, ``cached_tokens`` the read part, and no cache write is charged (0).

:func:`anthropic_vector` and :func:`openai_vector` read a stated usage object back
into the 7 billed dimensions, as pairlab's usage readers do; ``request_ledger``
bills a request for the (last) usage object the client was told.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from pairlab.core.emulator.prompt_blocks import TokenCount
from pairlab.core.emulator.prompt_cache import CacheUsage
from pairlab.core.schemas.usage import UsageVector

THINKING_COUNT_BETA: Final = "thinking-token-count"


def arguments_text(arguments: object) -> str:
    """A tool call's arguments as the model writes them: JSON, keys in the model's order.

    The wire modules stream exactly this text (Anthropic ``input_json_delta``, OpenAI
    ``function_call`` ``arguments``), so what is counted is what the client received."""
    return json.dumps(arguments, ensure_ascii=False)


def _texts(parts: object, kind: str) -> list[str]:
    if not isinstance(parts, list):
        return []
    return [p["text"] for p in parts if isinstance(p, dict) and p.get("type") == kind]


def produced_texts(part: Mapping[str, Any]) -> list[str]:
    """The texts the model produced in one answer part (content block or output item).

    Raises ``ValueError`` for a part type the emulator does not produce: an answer it
    cannot count is a bug, never 0 tokens."""
    kind = part.get("type")
    if kind == "text":  # Anthropic text block
        return [part["text"]]
    if kind == "tool_use":  # Anthropic tool call
        return [arguments_text(part.get("input") or {})]
    if kind == "reasoning":  # OpenAI reasoning summary
        return _texts(part.get("summary"), "summary_text")
    if kind == "message":  # OpenAI message
        return _texts(part.get("content"), "output_text")
    if kind == "function_call":  # OpenAI: the arguments are already the written JSON
        return [part["arguments"]]
    if kind == "custom_tool_call":  # OpenAI freeform tool (apply_patch)
        return [part["input"]]
    if kind == "tool_search_call":
        return [arguments_text(part.get("arguments") or {})]
    raise ValueError(f"no output-token rule for an answer part of type {kind!r}")


def part_tokens(part: Mapping[str, Any], count: TokenCount) -> int:
    """The tokens of the texts one answer part produced."""
    return sum(count(text) for text in produced_texts(part))


def output_tokens(parts: Iterable[Mapping[str, Any]], count: TokenCount) -> int:
    """``max(1, sum of part_tokens(part))``: what an answer states as output."""
    return max(1, sum(part_tokens(part, count) for part in parts))


def anthropic_usage(
    cache: CacheUsage,
    blocks: list[dict[str, Any]],
    count: TokenCount,
    *,
    anthropic_beta: str = "",
) -> dict[str, Any]:
    """The Messages API usage object for a message of ``blocks``."""
    usage: dict[str, Any] = {
        "input_tokens": cache.uncached,
        "cache_creation_input_tokens": cache.cache_write_5m + cache.cache_write_1h,
        "cache_read_input_tokens": cache.cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": cache.cache_write_5m,
            "ephemeral_1h_input_tokens": cache.cache_write_1h,
        },
        "output_tokens": output_tokens(blocks, count),
        "service_tier": "standard",
    }
    if THINKING_COUNT_BETA in anthropic_beta:
        usage["output_tokens_details"] = {"thinking_tokens": 0}
    return usage


def openai_usage(
    cache: CacheUsage, items: list[dict[str, Any]], count: TokenCount
) -> dict[str, Any]:
    """The Responses API usage object for a response of output ``items``."""
    reasoning = sum(part_tokens(i, count) for i in items if i["type"] == "reasoning")
    output = output_tokens(items, count)
    return {
        "input_tokens": cache.total,
        # prompt caching is automatic and writes are not charged: 0 written (billed)
        "input_tokens_details": {"cached_tokens": cache.cache_read, "cache_write_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": cache.total + output,
    }


def anthropic_vector(wire: Mapping[str, Any]) -> UsageVector:
    """The 7 dimensions of a usage object, as pairlab's Claude reader computes them."""
    split = wire.get("cache_creation") or {}
    details = wire.get("output_tokens_details")
    return UsageVector(
        uncached_input=wire["input_tokens"],
        cache_read=wire["cache_read_input_tokens"],
        cache_write_5m=split.get("ephemeral_5m_input_tokens"),
        cache_write_1h=split.get("ephemeral_1h_input_tokens"),
        output=wire["output_tokens"],
        reasoning=details.get("thinking_tokens") if isinstance(details, dict) else None,
    )


def openai_vector(wire: Mapping[str, Any]) -> UsageVector:
    """The 7 dimensions of a usage object. OpenAI bills no cache writes and Codex records
    them as 0, so the write dimension is 0, not unknown."""
    cached = wire["input_tokens_details"]["cached_tokens"]
    return UsageVector(
        uncached_input=wire["input_tokens"] - cached,
        cache_read=cached,
        cache_write_generic=0,
        output=wire["output_tokens"],
        reasoning=wire["output_tokens_details"]["reasoning_tokens"],
    )


__all__ = [
    "THINKING_COUNT_BETA",
    "anthropic_usage",
    "anthropic_vector",
    "arguments_text",
    "openai_usage",
    "openai_vector",
    "output_tokens",
    "part_tokens",
    "produced_texts",
]
