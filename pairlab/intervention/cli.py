"""``token-optimizer``: the reference intervention's command line (stdlib argparse).

    token-optimizer mcp                   serve MCP on stdin/stdout (what client configs start)
    token-optimizer tools [--arm ARM]     the tools an arm is offered, as JSON
    token-optimizer --version

Exit status: 0 ok, 2 invalid settings (e.g. an unknown arm; the message is on
stderr), 3 the local tokenizer is unavailable.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from pairlab.core.errors import PairlabError
from pairlab.intervention import SERVER_NAME, SERVER_VERSION
from pairlab.intervention.mcp_protocol import LATEST_VERSION, McpSession
from pairlab.intervention.settings import ARM_ENV, ServerSettings
from pairlab.intervention.stdio_server import serve
from pairlab.intervention.tool_table import tools_for_arm
from pairlab.intervention.tools import ToolContext


def new_process_id() -> str:
    """Unique per server process (a pid can be reused; the random part cannot repeat)."""
    return f"{SERVER_NAME}:{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=SERVER_NAME, description="pairlab's reference token-optimization MCP server"
    )
    parser.add_argument("--version", action="version", version=f"{SERVER_NAME} {SERVER_VERSION}")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("mcp", help="serve MCP over stdio (JSON-RPC 2.0, one message per line)")
    tools = commands.add_parser("tools", help="print the tools an arm is offered, as JSON")
    tools.add_argument("--arm", help=f"default: ${ARM_ENV}, else baseline")
    return parser


def _run(args: argparse.Namespace) -> int:
    environ = dict(os.environ)
    if args.command == "tools":
        if args.arm is not None:
            environ[ARM_ENV] = args.arm
        environ.setdefault("TOKEN_OPTIMIZER_LEDGER", os.devnull)  # listing writes nothing
        settings = ServerSettings.from_env(environ, Path.cwd())
        listing = [t.describe(LATEST_VERSION) for t in tools_for_arm(settings.arm).values()]
        print(json.dumps({"arm": settings.arm, "tools": listing}, indent=2))
        return 0
    settings = ServerSettings.from_env(environ, Path.cwd())
    context = ToolContext(settings, new_process_id())
    if settings.is_treated:
        context.preload()
    return serve(McpSession(context), sys.stdin.buffer, sys.stdout.buffer, settings.trace_path)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except PairlabError as exc:
        print(f"{SERVER_NAME}: {exc.message} [{exc.reason}]", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 0
