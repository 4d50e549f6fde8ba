"""A planted MCP server for ``pairlab certify`` (standard library only; run as a script).

``python3 planted_mcp_server.py <slug>`` marks that it was started -- it creates
``$PAIRLAB_STATE_DIR/pairlab-planted/<slug>`` -- and then answers the MCP handshake
with one tool, ``planted_<slug>``, so a client that loads it also shows it to the
model. A baseline (or treated) episode that starts it has leaked planted config.
The certify run copies this file next to the planted configs that name it.
"""

from __future__ import annotations

import json
import os
import sys


def _mark(slug: str) -> None:
    state = os.environ.get("PAIRLAB_STATE_DIR")
    if not state:
        return
    folder = os.path.join(state, "pairlab-planted")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, slug), "a", encoding="utf-8") as handle:
        handle.write("mcp server started\n")


def _result(slug: str, method: str, params: dict[str, object]) -> dict[str, object] | None:
    if method == "initialize":
        version = params.get("protocolVersion") or "2025-06-18"
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": f"pairlab-planted-{slug}", "version": "1"},
        }
    if method == "tools/list":
        tool = {
            "name": "planted_" + slug.replace("-", "_"),
            "description": f"pairlab-planted:{slug} (a planted MCP server)",
            "inputSchema": {"type": "object", "properties": {}},
        }
        return {"tools": [tool]}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": f"pairlab-planted:{slug}"}]}
    if method == "ping":
        return {}
    return None


def main(argv: list[str]) -> int:
    slug = argv[1] if len(argv) > 1 else "unnamed"
    _mark(slug)
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message:
            continue  # a notification
        params = message.get("params")
        result = _result(
            slug, str(message.get("method")), params if isinstance(params, dict) else {}
        )
        reply: dict[str, object] = {"jsonrpc": "2.0", "id": message["id"]}
        if result is None:
            reply["error"] = {"code": -32601, "message": "method not found"}
        else:
            reply["result"] = result
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
