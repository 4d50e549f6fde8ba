"""What each model request carried of each MCP server, in tokens: the per-request
definition cost of an intervention, measured on every run (issue 26 item 5), not only
by ``pairlab certify``.

The emulator reads the request as the CLI sent it: an Anthropic request is Claude
Code's, an OpenAI Responses request Codex's (the two real CLIs pairlab drives against
it). Per MCP server the request names (``offered_servers``), it counts what the request
carried of it with :func:`pairlab.adapters.clients.base.listing_tokens` -- certify's
rule: the definitions as carried, plus the lines naming deferred tools or the server --
with the emulator's own counter (cl100k). The result goes on the request's ledger row
(``mcp_definition_tokens``); ``core/intervention_health`` picks the run's intervention
out of it per episode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pairlab.adapters.clients.base import ServerListing, listing_tokens


def _readers(
    provider: str,
) -> tuple[Callable[[dict[str, Any]], set[str]], Callable[[dict[str, Any], str], ServerListing]]:
    if provider == "anthropic":
        from pairlab.adapters.clients.claude import claude_offered_servers, claude_server_listing

        return claude_offered_servers, claude_server_listing
    from pairlab.adapters.clients.codex import codex_offered_servers, codex_server_listing

    return codex_offered_servers, codex_server_listing


def mcp_definition_tokens(
    provider: str, body: dict[str, Any], count: Callable[[str], int]
) -> dict[str, int]:
    """``{server: tokens}`` for every MCP server the request names (empty: none)."""
    offered, listing = _readers(provider)
    return {
        server: listing_tokens(listing(body, server), count) for server in sorted(offered(body))
    }


__all__ = ["mcp_definition_tokens"]
