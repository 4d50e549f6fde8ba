"""What a Codex request carried of one MCP server (certify's listed tools, issue 26 item
3): Codex 0.163.0 defers MCP tools behind ``tool_search`` -- the request names the server
on a line of the search tool's description, and the tools a search loaded come back as
``tool_search_output`` items of the input (shapes as measured against the emulator),
never in ``tools``."""

from __future__ import annotations

from typing import Any

from pairlab.adapters.clients.codex import codex_server_listing

SEARCH = {
    "type": "tool_search",
    "description": "Search tools of these sources:\n- token-optimizer: Files.\n- other: x",
}


def _loaded(namespace: str, *tools: str) -> dict[str, Any]:
    return {
        "type": "namespace",
        "name": namespace,
        "description": f"Tools in the {namespace} namespace.",
        "tools": [{"type": "function", "name": t, "defer_loading": True} for t in tools],
    }


def test_before_a_search_the_request_names_only_the_server() -> None:
    listing = codex_server_listing({"tools": [SEARCH], "input": []}, "token-optimizer")
    assert listing.tools == () and listing.definitions == ()
    assert listing.texts == ("- token-optimizer: Files.",) and listing.listed


def test_the_tools_a_search_loaded_are_listed_with_their_definitions() -> None:
    body = {
        "tools": [SEARCH],
        "input": [
            {"type": "tool_search_call", "call_id": "s1", "arguments": {"query": "x"}},
            {
                "type": "tool_search_output",
                "call_id": "s1",
                "tools": [
                    _loaded("mcp__token_optimizer", "read_file", "expand"),
                    _loaded("mcp__other", "read_file"),
                ],
            },
            # a second search loading one of them again: listed once
            {
                "type": "tool_search_output",
                "call_id": "s2",
                "tools": [_loaded("mcp__token_optimizer", "read_file"), "junk"],
            },
        ],
    }
    listing = codex_server_listing(body, "token-optimizer")
    assert listing.tools == ("mcp__token_optimizer/read_file", "mcp__token_optimizer/expand")
    # their definitions as carried (resent in every later request), the other server's not
    assert listing.definitions == (
        _loaded("mcp__token_optimizer", "read_file", "expand"),
        _loaded("mcp__token_optimizer", "read_file"),
    )
    assert listing.texts == ("- token-optimizer: Files.",)
    assert codex_server_listing(body, "absent").tools == ()
