"""Anthropic Messages API wire format: the message, its SSE stream, errors, headers.

Stream (``stream: true``): ``message_start`` (the message with no content and the
input usage, ``output_tokens`` 1), ``ping``, then per content block
``content_block_start`` / ``content_block_delta`` (``text_delta`` chunks, or
``input_json_delta`` chunks of a ``tool_use`` input) / ``content_block_stop``, then
``message_delta`` (stop reason and the final usage) and ``message_stop``.
Errors: ``{"type": "error", "error": {"type", "message"}, "request_id"}``.
"""

from __future__ import annotations

import time
from typing import Any, Final

from pairlab.adapters.emulator.reply import Refusal, Reply, json_reply
from pairlab.core.emulator.request_ledger import Fault
from pairlab.core.emulator.scripted_model import ModelTurn
from pairlab.core.emulator.usage import arguments_text

CHUNK_CHARS: Final = 64


def content_blocks(turn: ModelTurn, tool_use_id: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    if turn.call is not None:
        blocks.append(
            {
                "type": "tool_use",
                "id": tool_use_id,
                "name": turn.call.name,
                "input": turn.call.arguments or {},
            }
        )
    return blocks


def message(
    *, message_id: str, model: str, blocks: list[dict[str, Any]], usage: dict[str, Any]
) -> dict[str, Any]:
    has_tool = any(b["type"] == "tool_use" for b in blocks)
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": "tool_use" if has_tool else "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def _chunks(text: str) -> list[str]:
    return [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)] or [""]


def stream_events(full: dict[str, Any]) -> list[dict[str, Any]]:
    """The SSE events of a message, in order (``full`` is the complete message)."""
    start_usage = {**full["usage"], "output_tokens": 1}
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {**full, "content": [], "stop_reason": None, "usage": start_usage},
        },
        {"type": "ping"},
    ]
    for index, block in enumerate(full["content"]):
        if block["type"] == "text":
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                }
            )
            events.extend(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": part},
                }
                for part in _chunks(block["text"])
            )
        else:
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {**block, "input": {}},
                }
            )
            events.extend(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": part},
                }
                for part in _chunks(arguments_text(block["input"]))
            )
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": full["stop_reason"], "stop_sequence": None},
            "usage": full["usage"],
        }
    )
    events.append({"type": "message_stop"})
    return events


# A cut stream ends after message_start by default: the client has the input usage and
# no content, and Claude Code 2.1.332 then retries the turn without streaming.
DEFAULT_CUT_AFTER_EVENTS: Final = 1


def stated_usage(events: list[dict[str, Any]], sent: int) -> dict[str, Any] | None:
    """The last usage the client was told among the first ``sent`` events."""
    stated = None
    for event in events[:sent]:
        if event["type"] == "message_start":
            stated = event["message"]["usage"]
        elif event["type"] == "message_delta":
            stated = event["usage"]
    return stated


def error_body(error_type: str, text: str, request_id: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": error_type, "message": text},
        "request_id": request_id,
    }


def error_reply(refusal: Refusal, request_id: str) -> Reply:
    body = error_body(refusal.error_type, refusal.message, request_id)
    return json_reply(refusal.status, body, {"request-id": request_id, **refusal.headers})


def invalid(message: str, param: str | None = None) -> Refusal:
    return Refusal(400, "invalid_request_error", message, param=param)


def fault_refusal(fault: Fault) -> Refusal | None:
    """A 429 or an overload (a cut stream is applied while answering).

    ``usage-limit-429`` is what a subscription whose window is used up gets: a 429
    ``rate_limit_error`` whose unified rate-limit headers say ``rejected``, with the
    window's reset (an hour ahead) and ``retry-after``."""
    if fault.kind == "usage-limit-429":
        reset = str(int(time.time()) + 3600)
        headers = {
            "retry-after": str(fault.retry_after_s),
            "anthropic-ratelimit-unified-status": "rejected",
            "anthropic-ratelimit-unified-representative-claim": "five_hour",
            "anthropic-ratelimit-unified-reset": reset,
            "anthropic-ratelimit-unified-5h-status": "rejected",
            "anthropic-ratelimit-unified-5h-utilization": "1.00",
            "anthropic-ratelimit-unified-5h-reset": reset,
        }
        text = "This request would exceed your account's usage limit (emulated fault)."
        return Refusal(429, "rate_limit_error", text, headers)
    if fault.kind in ("rate-limit-429", "rate-limit-held"):
        headers = {"retry-after": str(fault.retry_after_s), "x-should-retry": "true"}
        text = "This request would exceed your rate limit (emulated fault)."
        return Refusal(429, "rate_limit_error", text, headers)
    if fault.kind == "overloaded-529":
        text = "Overloaded (emulated fault)."
        return Refusal(529, "overloaded_error", text, {"x-should-retry": "true"})
    return None


def quota_refusal(window: str, wait_s: int) -> Refusal:
    text = f"The {window} usage limit of this account is reached (emulated quota)."
    return Refusal(429, "rate_limit_error", text, {"retry-after": str(wait_s)})


__all__ = [
    "DEFAULT_CUT_AFTER_EVENTS",
    "content_blocks",
    "error_body",
    "error_reply",
    "fault_refusal",
    "invalid",
    "message",
    "quota_refusal",
    "stated_usage",
    "stream_events",
]
