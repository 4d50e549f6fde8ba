"""What the emulator answers: a JSON body or an SSE stream, plus what to do once it is out.

The HTTP layer writes a :class:`Reply` and then calls ``on_delivered`` when every
byte reached the socket, or ``on_failed`` (a reason and how many SSE frames were
sent) when the stream was cut on purpose or the client went away -- which is how the
ledger knows what usage the client was told, and so what is billed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def _nothing() -> None:
    return None


def _nothing_failed(reason: str, frames_sent: int) -> None:
    return None


@dataclass
class Reply:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None  # a whole body (JSON)
    frames: list[bytes] | None = None  # SSE frames, written one by one
    cut_after: int | None = None  # stop the stream after this many frames
    cut_drops_connection: bool = False  # reset the connection instead of ending the body
    on_delivered: Callable[[], None] = _nothing
    on_failed: Callable[[str, int], None] = _nothing_failed  # (reason, SSE frames sent)


@dataclass(frozen=True)
class Refusal:
    """An error answer, provider-neutral until a wire module writes it."""

    status: int
    error_type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)
    code: str | None = None  # OpenAI's error code
    param: str | None = None  # the request field at fault


def json_reply(status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    return Reply(
        status=status,
        headers={"content-type": "application/json", **(headers or {})},
        body=body,
    )


def sse_frame(event: dict[str, Any]) -> bytes:
    """One server-sent event: ``event: <type>`` and its JSON ``data`` line."""
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event['type']}\ndata: {data}\n\n".encode()


__all__ = ["Refusal", "Reply", "json_reply", "sse_frame"]
