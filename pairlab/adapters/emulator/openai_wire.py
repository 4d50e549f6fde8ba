"""OpenAI Responses API wire format: output items, the SSE stream, errors.

Stream: ``response.created`` and ``response.in_progress`` (the response with no
output), then per output item ``response.output_item.added``, its content events
(a reasoning summary's ``response.reasoning_summary_*``, a message's
``response.content_part.*`` / ``response.output_text.*``, a function call's
``response.function_call_arguments.*``, a custom tool call's
``response.custom_tool_call_input.*``) and ``response.output_item.done``, then
``response.completed`` with the whole response and its usage. Every event carries a
``sequence_number``. Errors: ``{"error": {"message", "type", "param", "code"}}``.
Items: ``reasoning``, ``message``, ``function_call`` (with ``namespace`` for an MCP
tool), ``custom_tool_call`` (``apply_patch``), ``tool_search_call``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from pairlab.adapters.emulator.reply import Refusal, Reply, json_reply
from pairlab.core.emulator.request_ledger import Fault
from pairlab.core.emulator.scripted_model import ModelTurn
from pairlab.core.emulator.usage import arguments_text

CHUNK_CHARS: Final = 64


def output_items(turn: ModelTurn, ids: Callable[[str], str]) -> list[dict[str, Any]]:
    """The response's output for one scripted turn; ``ids(prefix)`` mints stable ids."""
    items: list[dict[str, Any]] = []
    if turn.reasoning:
        items.append(
            {
                "type": "reasoning",
                "id": ids("rs"),
                "summary": [{"type": "summary_text", "text": turn.reasoning}],
            }
        )
    if turn.text:
        items.append(
            {
                "type": "message",
                "id": ids("msg"),
                "role": "assistant",
                "status": "completed",
                # a line before a tool call is commentary; the last message is the answer
                "phase": "commentary" if turn.call is not None else "final_answer",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    call = turn.call
    if call is None:
        return items
    if call.kind == "custom":
        items.append(
            {
                "type": "custom_tool_call",
                "id": ids("ctc"),
                "call_id": ids("call"),
                "name": call.name,
                "input": call.raw_input or "",
                "status": "completed",
            }
        )
    elif call.kind == "tool_search":
        items.append(
            {
                "type": "tool_search_call",
                "id": ids("tsc"),
                "call_id": ids("call"),
                "execution": "client",
                "arguments": call.arguments or {},
                "status": "completed",
            }
        )
    else:
        item: dict[str, Any] = {
            "type": "function_call",
            "id": ids("fc"),
            "call_id": ids("call"),
            "name": call.name,
            "arguments": arguments_text(call.arguments or {}),
            "status": "completed",
        }
        if call.namespace:
            item["namespace"] = call.namespace
        items.append(item)
    return items


def response(
    *,
    response_id: str,
    model: str,
    created_at: int,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    status: str,
) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "model": model,
        "output": output,
        "usage": usage,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "top_p": 1.0,
        "tool_choice": "auto",
        "tools": [],
    }


def _chunks(text: str) -> list[str]:
    return [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)] or [""]


def _message_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    base = {"item_id": item["id"], "output_index": index, "content_index": 0}
    text = item["content"][0]["text"]
    part = {"type": "output_text", "text": "", "annotations": []}
    return [
        {"type": "response.content_part.added", **base, "part": part},
        *(
            {"type": "response.output_text.delta", **base, "delta": d, "logprobs": []}
            for d in _chunks(text)
        ),
        {"type": "response.output_text.done", **base, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **base, "part": {**part, "text": text}},
    ]


def _reasoning_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    base = {"item_id": item["id"], "output_index": index, "summary_index": 0}
    text = item["summary"][0]["text"]
    part = {"type": "summary_text", "text": ""}
    return [
        {"type": "response.reasoning_summary_part.added", **base, "part": part},
        *(
            {"type": "response.reasoning_summary_text.delta", **base, "delta": d}
            for d in _chunks(text)
        ),
        {"type": "response.reasoning_summary_text.done", **base, "text": text},
        {"type": "response.reasoning_summary_part.done", **base, "part": {**part, "text": text}},
    ]


def _function_call_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    base = {"item_id": item["id"], "output_index": index}
    args = item["arguments"]
    return [
        *(
            {"type": "response.function_call_arguments.delta", **base, "delta": d}
            for d in _chunks(args)
        ),
        {"type": "response.function_call_arguments.done", **base, "arguments": args},
    ]


def _custom_tool_call_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    base = {"item_id": item["id"], "output_index": index, "call_id": item["call_id"]}
    text = item["input"]
    return [
        *(
            {"type": "response.custom_tool_call_input.delta", **base, "delta": d}
            for d in _chunks(text)
        ),
        {"type": "response.custom_tool_call_input.done", **base, "input": text},
    ]


# per item type: the item as ``response.output_item.added`` shows it (before its content
# is streamed), and the events streaming its content; other items have no content events
_OPENING: Final[dict[str, dict[str, Any]]] = {
    "message": {"status": "in_progress", "content": []},
    "reasoning": {"summary": []},
    "function_call": {"arguments": "", "status": "in_progress"},
    "custom_tool_call": {"input": "", "status": "in_progress"},
}
_CONTENT_EVENTS: Final[dict[str, Callable[[int, dict[str, Any]], list[dict[str, Any]]]]] = {
    "message": _message_events,
    "reasoning": _reasoning_events,
    "function_call": _function_call_events,
    "custom_tool_call": _custom_tool_call_events,
}


def _item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    """``response.output_item.added`` and the item's content events (not its ``done``)."""
    kind = item["type"]
    opening = {**item, **_OPENING.get(kind, {"status": "in_progress"})}
    added = {"type": "response.output_item.added", "output_index": index, "item": opening}
    content = _CONTENT_EVENTS.get(kind)
    return [added, *(content(index, item) if content is not None else [])]


def stream_events(final: dict[str, Any]) -> list[dict[str, Any]]:
    """The SSE events of a completed response, with sequence numbers."""
    opening = {**final, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": opening},
        {"type": "response.in_progress", "response": opening},
    ]
    for index, item in enumerate(final["output"]):
        events.extend(_item_events(index, item))
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": final})
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


def default_cut_point(events: list[dict[str, Any]]) -> int:
    """Where a cut stream ends by default: after the first delta (before any item is done)."""
    for i, event in enumerate(events):
        if event["type"].endswith(".delta"):
            return i + 1
    return 2


def stated_usage(events: list[dict[str, Any]], sent: int) -> dict[str, Any] | None:
    """The usage the client was told among the first ``sent`` events (only at completion)."""
    for event in events[:sent]:
        if event["type"] == "response.completed":
            usage = event["response"].get("usage")
            return usage if isinstance(usage, dict) else None
    return None


def error_body(
    error_type: str, text: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": text, "type": error_type, "param": param, "code": code}}


def error_reply(refusal: Refusal, request_id: str) -> Reply:
    body = error_body(refusal.error_type, refusal.message, param=refusal.param, code=refusal.code)
    return json_reply(refusal.status, body, {"x-request-id": request_id, **refusal.headers})


def invalid(message: str, param: str | None = None) -> Refusal:
    return Refusal(400, "invalid_request_error", message, param=param)


def fault_refusal(fault: Fault) -> Refusal | None:
    """A 429, or OpenAI's overload (503: OpenAI has no 529); a cut stream is applied later."""
    retry = {"retry-after": str(fault.retry_after_s)}
    if fault.kind == "usage-limit-429":
        text = "The usage limit has been reached (emulated fault)."
        return Refusal(429, "usage_limit_reached", text, retry, code="usage_limit_reached")
    if fault.kind in ("rate-limit-429", "rate-limit-held"):
        text = (
            "Rate limit reached for requests (emulated fault). "
            f"Please try again in {fault.retry_after_s}s."
        )
        return Refusal(429, "requests", text, retry, code="rate_limit_exceeded")
    if fault.kind == "overloaded-529":
        text = "The server is overloaded (emulated fault). Please try again."
        return Refusal(503, "server_error", text, retry, code="server_is_overloaded")
    return None


def quota_refusal(window: str, wait_s: int) -> Refusal:
    text = f"The {window} usage limit of this account is reached (emulated quota)."
    headers = {"retry-after": str(wait_s)}
    return Refusal(429, "usage_limit_reached", text, headers, code="usage_limit_reached")


__all__ = [
    "default_cut_point",
    "error_body",
    "error_reply",
    "fault_refusal",
    "invalid",
    "output_items",
    "quota_refusal",
    "response",
    "stated_usage",
    "stream_events",
]
