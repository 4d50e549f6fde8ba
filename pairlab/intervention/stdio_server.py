"""The stdio transport: newline-delimited JSON-RPC on stdin/stdout, one message per line.

stdout carries protocol messages only; diagnostics go to stderr (the clients
keep it in their MCP logs). End of input, SIGINT (what Claude Code sends) and
SIGTERM end the server at once, quietly, with status 0. With ``TOKEN_OPTIMIZER_TRACE`` set,
every line received and sent is appended, verbatim, to that JSONL file -- the
way tests/fixtures/mcp/ recorded what the real clients send.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from types import FrameType
from typing import IO, Any

from pairlab.intervention.mcp_protocol import (
    INVALID_REQUEST,
    McpSession,
    error_response,
    parse_line,
)


class _Trace:
    def __init__(self, path: Path | None) -> None:
        self._file = path.open("a", encoding="utf-8") if path is not None else None

    def write(self, direction: str, line: str) -> None:
        if self._file is not None:
            record = {"t": round(time.time(), 6), "dir": direction, "line": line}
            self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._file.flush()


def _stop(signum: int, frame: FrameType | None) -> None:
    # Immediately: every reply and ledger row is written and flushed before the next line
    # is read, so nothing is pending. (Claude Code sends SIGINT and escalates to SIGTERM
    # after 100 ms; an interpreter shutdown under load took longer.)
    os._exit(0)


def _responses(session: McpSession, message: object) -> Any:
    if isinstance(message, list):  # a JSON-RPC batch (MCP 2025-03-26 allows them)
        if not message:
            return error_response(None, INVALID_REQUEST, "empty batch")
        replies = [reply for item in message if (reply := session.handle(item)) is not None]
        return replies or None
    return session.handle(message)


def serve(session: McpSession, stdin: IO[bytes], stdout: IO[bytes], trace_path: Path | None) -> int:
    """Answer messages until end of input; the exit status."""
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    trace = _Trace(trace_path)
    try:
        for raw in stdin:
            line = raw.strip()
            if not line:
                continue
            trace.write("in", line.decode("utf-8", errors="replace"))
            message, parse_error = parse_line(line)
            reply = parse_error if parse_error is not None else _responses(session, message)
            if reply is None:
                continue
            text = json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
            trace.write("out", text)
            stdout.write(text.encode("utf-8") + b"\n")
            stdout.flush()
    except BrokenPipeError:
        return 0  # the client went away
    return 0
