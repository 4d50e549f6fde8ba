"""The MCP methods the server answers, over JSON-RPC 2.0 messages (already parsed).

Handshake as the real clients do it (REAL-CLIS.md; tests/fixtures/mcp/):

* Claude Code 2.1.332 first sends ``server/discover`` (the stateless 2026-07-28
  revision); we answer "method not found", as a server of the stable revisions
  does, and it falls back to ``initialize`` with protocol 2025-11-25.
* Codex 0.163.0 sends ``initialize`` with 2025-06-18, then ``tools/list`` and
  ``tools/call`` carrying its own call id in ``params._meta``.

``initialize`` answers with the client's revision when we support it, else our
latest (the client then decides). Notifications (``notifications/initialized``,
``notifications/cancelled``) get no answer. Requests are served in order, one at
a time. A tool that refuses returns a result with ``isError: true`` (the model
sees the message); protocol mistakes get JSON-RPC errors.

Identity of a tool call for the ledger: the process id of this server; the
client's session -- Claude's ``CLAUDE_CODE_SESSION_ID`` (its transcript's session),
Codex's ``_meta["x-codex-turn-metadata"].session_id`` (its thread), else the
episode id and the handshake count; and the client's own tool-call id when it
sends one (Claude ``_meta["claudecode/toolUseId"]`` = the transcript's tool_use
id, Codex ``_meta.callId`` = the rollout's call_id; a retry repeats it), else the
JSON-RPC id. So a ledger row joins the CLI's transcript exactly.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, Final

from pairlab.intervention import SERVER_NAME, SERVER_VERSION
from pairlab.intervention.ledger_rows import RequestIdentity
from pairlab.intervention.tool_table import tools_for_arm
from pairlab.intervention.tools import ToolCall, ToolContext, ToolFailure

SUPPORTED_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION: Final = SUPPORTED_VERSIONS[-1]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

# Where clients put their own id of a tool call in tools/call ``params._meta``.
CLIENT_CALL_ID_KEYS: Final = ("claudecode/toolUseId", "callId")
CODEX_TURN_METADATA: Final = "x-codex-turn-metadata"

INSTRUCTIONS: Final = (
    "read_file reads workspace files; a large file comes back as a preview with an "
    "'expansion reference' -- call expand with it when you need the full text."
)


def error_response(request_id: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _result(request_id: object, result: Mapping[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": dict(result)}


def _text_result(text: str, *, is_error: bool) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


class McpSession:
    """One client connection: the negotiated revision and the tools of this arm."""

    def __init__(self, context: ToolContext) -> None:
        self.context = context
        self.tools = tools_for_arm(context.settings.arm)
        self.protocol_version: str | None = None
        self.handshakes = 0

    # -- identity -------------------------------------------------------------

    def session_id(self, meta: Mapping[str, Any]) -> str:
        settings = self.context.settings
        if settings.client_session_id:
            return settings.client_session_id
        turn = meta.get(CODEX_TURN_METADATA)
        if (
            isinstance(turn, Mapping)
            and isinstance(turn.get("session_id"), str)
            and turn["session_id"]
        ):
            return str(turn["session_id"])
        episode = settings.episode_id or "no-episode"
        return f"{episode}#mcp-{max(self.handshakes, 1)}"

    def identity(self, request_id: object, params: Mapping[str, Any]) -> RequestIdentity:
        raw_meta = params.get("_meta")
        meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
        call_id = next((meta[k] for k in CLIENT_CALL_ID_KEYS if meta.get(k)), None)
        client_id = str(call_id) if isinstance(call_id, str | int) else None
        rpc = client_id if client_id is not None else str(request_id)
        return RequestIdentity(self.context.process_id, self.session_id(meta), rpc, client_id)

    # -- dispatch -------------------------------------------------------------

    def handle(self, message: object) -> dict[str, Any] | None:
        """The response to one message, or None for a notification (or a response)."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            request_id = message.get("id") if isinstance(message, dict) else None
            return error_response(request_id, INVALID_REQUEST, "not a JSON-RPC 2.0 message")
        method = message.get("method")
        request_id = message.get("id")
        is_notification = "id" not in message
        if not isinstance(method, str):
            # a response to something we never sent, or garbage
            return (
                None
                if is_notification or "result" in message or "error" in message
                else (error_response(request_id, INVALID_REQUEST, "request without a method"))
            )
        params = message.get("params") or {}
        if not isinstance(params, dict):
            return (
                None
                if is_notification
                else error_response(request_id, INVALID_PARAMS, "params must be an object")
            )
        if is_notification:
            return None  # initialized, cancelled, roots/list_changed: nothing to do
        try:
            return self._dispatch(method, request_id, params)
        except Exception as exc:  # a bug in a handler must not kill the session
            print(f"token-optimizer: internal error in {method}: {exc!r}", file=sys.stderr)
            return error_response(
                request_id, INTERNAL_ERROR, f"internal error: {type(exc).__name__}"
            )

    def _dispatch(self, method: str, request_id: object, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            return _result(request_id, self._initialize(params))
        if method == "ping":
            return _result(request_id, {})
        if method == "tools/list":
            version = self.protocol_version or LATEST_VERSION
            return _result(
                request_id, {"tools": [tool.describe(version) for tool in self.tools.values()]}
            )
        if method == "tools/call":
            return self._call_tool(request_id, params)
        return error_response(request_id, METHOD_NOT_FOUND, f"method not found: {method}")

    def _initialize(self, params: Mapping[str, Any]) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        version = requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION
        assert isinstance(version, str)
        self.protocol_version = version
        self.handshakes += 1
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION},
        }
        if self.tools:
            result["instructions"] = INSTRUCTIONS
        return result

    def _call_tool(self, request_id: object, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments")
        arguments = {} if arguments is None else arguments
        if not isinstance(name, str) or name not in self.tools:
            offered = ", ".join(self.tools) or "none in this arm"
            return error_response(
                request_id, INVALID_PARAMS, f"unknown tool: {name!r} (offered: {offered})"
            )
        if not isinstance(arguments, dict):
            return error_response(request_id, INVALID_PARAMS, "arguments must be an object")
        call = ToolCall(name, arguments, self.identity(request_id, params))
        try:
            text = self.tools[name].handler(self.context, call)
        except ToolFailure as exc:
            self.context.log_call(call, is_error=True)
            return _result(request_id, _text_result(str(exc), is_error=True))
        self.context.log_call(call, is_error=False)
        return _result(request_id, _text_result(text, is_error=False))


def parse_line(line: bytes) -> tuple[object, dict[str, Any] | None]:
    """(message, None) or (None, the JSON-RPC parse error to send back)."""
    try:
        return json.loads(line.decode("utf-8")), None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, error_response(None, PARSE_ERROR, f"parse error: {exc}")
