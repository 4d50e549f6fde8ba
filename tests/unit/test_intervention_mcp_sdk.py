"""The server through the official MCP Python SDK's stdio client (a client nobody here wrote).

The SDK validates every message against its own types (pydantic), so a field the
spec does not allow, a wrong result shape or a broken handshake fails here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from pairlab.core.accounting.ledger_rules import qualify_row
from tests.intervention_harness import EpisodeDirs


def _params(dirs: EpisodeDirs, arm: str) -> StdioServerParameters:
    env = dirs.env(arm)
    del env["PATH"], env["HOME"]  # the SDK merges its default environment
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "pairlab.intervention", "mcp"],
        env=env,
        cwd=str(dirs.workspace),
    )


def test_official_sdk_client_lists_and_calls_the_tools(tmp_path: Path) -> None:
    dirs = EpisodeDirs(tmp_path / "ep")
    body = "".join(f"def f{i}(x):\n    return x + {i}  # {'é' * 5}\n" for i in range(200))
    (dirs.workspace / "mod.py").write_text(body, encoding="utf-8")

    async def session() -> tuple[list[str], str, str, bool, str]:
        async with (
            stdio_client(_params(dirs, "optimizer")) as streams,
            ClientSession(*streams) as s,
        ):
            init = await s.initialize()
            tools = [t.name for t in (await s.list_tools()).tools]
            preview = await s.call_tool("read_file", {"path": "mod.py"})
            text = preview.content[0].text  # type: ignore[union-attr]
            ref = next(ln for ln in text.splitlines() if ln.startswith("expansion reference: "))
            full = await s.call_tool("expand", {"ref": ref.split(": ", 1)[1]})
            refused = await s.call_tool("read_file", {"path": "/etc/hostname"})
            return (
                tools,
                init.protocol_version,
                full.content[0].text,  # type: ignore[union-attr]
                bool(refused.is_error),
                refused.content[0].text,  # type: ignore[union-attr]
            )

    tools, version, full, refused, message = anyio.run(session)
    assert tools == ["read_file", "expand"] and version == "2025-11-25"
    assert full == body
    assert refused and "outside the workspace" in message
    assert [r["kind"] for r in dirs.rows()] == ["reduction", "expansion"]
    assert all(qualify_row(r).is_qualified for r in dirs.rows())


def test_official_sdk_client_sees_no_tools_in_the_baseline(tmp_path: Path) -> None:
    dirs = EpisodeDirs(tmp_path / "ep")

    async def session() -> list[str]:
        async with stdio_client(_params(dirs, "baseline")) as streams, ClientSession(*streams) as s:
            await s.initialize()
            return [t.name for t in (await s.list_tools()).tools]

    assert anyio.run(session) == []
