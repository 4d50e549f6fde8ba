"""A stand-in for the reference intervention's MCP server (CONTRACT-14), for the emulator tests.

The real server (``token-optimizer mcp``) is built on another branch; until the
branches merge, the emulator's treated-arm tests need *an* MCP server with the
contract's interface so the real CLIs can offer and call its tools: ``read_file``
(``{"path"}``; a file of at most ``PREVIEW_THRESHOLD_TOKENS`` cl100k tokens comes back
whole, a larger one as a preview ending in ``expansion reference: sha256:<hex>``)
and ``expand`` (``{"ref", "start_line"?, "end_line"?}``). It exposes no tools when
``TOKEN_OPTIMIZER_EXPERIMENT_ARM`` is ``baseline`` or unset, and refuses paths
outside the workspace (``PAIRLAB_WORKSPACE`` or the working directory).

Protocol: newline-delimited JSON-RPC 2.0 over stdio (``initialize``,
``notifications/initialized``, ``tools/list``, ``tools/call``, ``ping``; anything
else is "method not found"). Each call is appended to ``$PAIRLAB_STATE_DIR/mcp-calls.jsonl``
when that variable is set. After the merge, replace it with the real server.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from pairlab.core.accounting.tokenizer import load_token_counter

ARM = os.environ.get("TOKEN_OPTIMIZER_EXPERIMENT_ARM", "baseline")
THRESHOLD = int(os.environ.get("PREVIEW_THRESHOLD_TOKENS", "600"))
ROOT = Path(os.environ.get("PAIRLAB_WORKSPACE") or os.getcwd()).resolve()
STORE: dict[str, str] = {}

TOOLS = [
    {
        "name": "read_file",
        "description": "Read a text file of the workspace; a large file comes back as a preview with an expansion reference.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "path relative to the workspace"}
            },
            "required": ["path"],
        },
    },
    {
        "name": "expand",
        "description": "The full content (or a line range) behind an expansion reference.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "ref": {"type": "string"},
                "start_line": {"type": "integer"},
                "end_line": {"type": "integer"},
            },
            "required": ["ref"],
        },
    },
]


def _log(entry: dict[str, Any]) -> None:
    state = os.environ.get("PAIRLAB_STATE_DIR")
    if state:
        with open(Path(state) / "mcp-calls.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")


def _read_file(args: dict[str, Any]) -> tuple[str, bool]:
    target = (ROOT / str(args.get("path", ""))).resolve()
    if target != ROOT and ROOT not in target.parents:
        return f"refused: {args.get('path')} is outside the workspace", True
    try:
        text = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot read {args.get('path')}: {exc}", True
    if load_token_counter().count(text) <= THRESHOLD:
        return text, False
    ref = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    STORE[ref] = text
    lines = text.splitlines()
    outline = [
        f"{n}: {line}" for n, line in enumerate(lines, 1) if line.startswith(("def ", "class "))
    ]
    preview = "\n".join(lines[:10])
    return (
        f"{preview}\n... ({len(lines)} lines)\noutline:\n"
        + "\n".join(outline)
        + f"\nexpansion reference: {ref}",
        False,
    )


def _expand(args: dict[str, Any]) -> tuple[str, bool]:
    text = STORE.get(str(args.get("ref")))
    if text is None:
        return f"unknown reference {args.get('ref')}", True
    lines = text.splitlines(keepends=True)
    start, end = int(args.get("start_line") or 1), int(args.get("end_line") or len(lines))
    return "".join(lines[start - 1 : end]), False


def _answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method, rid = request.get("method"), request.get("id")
    if rid is None:
        return None  # a notification
    if method == "initialize":
        version = (request.get("params") or {}).get("protocolVersion", "2025-06-18")
        result: Any = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "token-optimizer", "version": "0.0.0-stand-in"},
        }
    elif method == "tools/list":
        result = {"tools": [] if ARM in ("baseline", "") else TOOLS}
    elif method == "tools/call":
        params = request.get("params") or {}
        name, args = params.get("name"), params.get("arguments") or {}
        tools = {"read_file": _read_file, "expand": _expand}
        if ARM in ("baseline", "") or name not in tools:
            text, is_error = f"unknown tool {name}", True
        else:
            text, is_error = tools[name](args)
        _log({"tool": name, "arguments": args, "is_error": is_error, "chars": len(text)})
        result = {"content": [{"type": "text", "text": text}], "isError": is_error}
    elif method == "ping":
        result = {}
    else:
        return {
            "jsonrpc": "2.0",
            "id": rid,
            "error": {"code": -32601, "message": f"method not found: {method}"},
        }
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError:
            continue
        answer = _answer(request)
        if answer is not None:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
