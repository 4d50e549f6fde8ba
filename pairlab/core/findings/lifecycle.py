"""Claim 1, wiring: which lifecycle events a client's protocol exposed to the intervention.

From one treated episode's evidence -- the intervention's JSON-RPC trace
(``TOKEN_OPTIMIZER_TRACE``: every line in and out), its evidence log and the CLI's own
transcript tool-call ids -- per event:

* ``session-start``: the client's MCP ``initialize`` (its ``clientInfo`` and revision);
* ``tool-discovery``: ``tools/list``;
* ``mcp-tool-call``: at least one ``tools/call`` answered;
* ``client-call-id``: every call carried the client's own tool-call id
  (``_meta["claudecode/toolUseId"]`` / ``_meta.callId``) and it is in the transcript;
* ``client-session-id``: every call's session is the client's own (Claude's
  ``CLAUDE_CODE_SESSION_ID``, Codex's turn metadata), not the episode fallback;
* ``tool-use``: the CLI's built-in tool uses (Bash, Read, ...) -- no client exposes them
  to an MCP server; Claude Code exposes them through native hooks, which the reference
  intervention does not install: ``not-exposed``, never ``missing``.

This is **deterministic verification**: labelled so, per client, and never an episode
record or a causal effect (``causalEvidence: false``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

KIND: Final = "deterministic-verification"
EVENTS: Final = (
    "session-start",
    "tool-discovery",
    "mcp-tool-call",
    "client-call-id",
    "client-session-id",
    "tool-use",
)
_CALL_ID_KEYS: Final = ("claudecode/toolUseId", "callId")


def _messages(trace: Sequence[Mapping[str, Any]], direction: str) -> list[dict[str, Any]]:
    out = []
    for entry in trace:
        if entry.get("dir") != direction:
            continue
        try:
            message = json.loads(str(entry.get("line", "")))
        except ValueError:
            continue
        if isinstance(message, dict):
            out.append(message)
    return out


def _status(ok: bool, detail: str) -> dict[str, str]:
    return {"status": "observed" if ok else "missing", "detail": detail}


def certify_lifecycle(
    client: str,
    trace: Sequence[Mapping[str, Any]],
    evidence: Sequence[Mapping[str, Any]],
    transcript_ids: set[str] | None,
) -> dict[str, Any]:
    inbound = _messages(trace, "in")
    init = next((m for m in inbound if m.get("method") == "initialize"), None)
    calls = [m for m in inbound if m.get("method") == "tools/call"]
    info = (init or {}).get("params", {}).get("clientInfo", {}) if init else {}
    client_ids = [
        next(
            (
                m.get("params", {}).get("_meta", {}).get(k)
                for k in _CALL_ID_KEYS
                if m.get("params", {}).get("_meta", {}).get(k)
            ),
            None,
        )
        for m in calls
    ]
    joined = [
        i for i in client_ids if i and transcript_ids is not None and str(i) in transcript_ids
    ]
    sessions = {str(e.get("sessionId")) for e in evidence if e.get("event") == "call"}
    own_sessions = bool(sessions) and not any("#mcp-" in s for s in sessions)
    events = {
        "session-start": _status(
            init is not None,
            f"initialize from {info.get('name')} {info.get('version')}, protocol "
            f"{(init or {}).get('params', {}).get('protocolVersion')}"
            if init
            else "no initialize",
        ),
        "tool-discovery": _status(
            any(m.get("method") == "tools/list" for m in inbound), "tools/list"
        ),
        "mcp-tool-call": _status(bool(calls), f"{len(calls)} tools/call"),
        "client-call-id": _status(
            bool(calls) and len(joined) == len(calls),
            f"{len(joined)} of {len(calls)} calls carry the client's id found in its transcript",
        ),
        "client-session-id": _status(own_sessions, f"sessions {sorted(sessions)}"),
        "tool-use": {
            "status": "not-exposed",
            "detail": "built-in tool uses reach no MCP server (Claude: native hooks, not wired)",
        },
    }
    exposed = [e for e in events.values() if e["status"] != "not-exposed"]
    return {
        "client": client,
        "kind": KIND,
        "causalEvidence": False,
        "passed": all(e["status"] == "observed" for e in exposed),
        "events": events,
    }
