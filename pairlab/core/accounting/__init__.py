"""MCP transport accounting: local token counting, ledger qualification rules, the savings audit.

Everything here is pure (no SQLite, no CLI); the SQLite ledger lives in
``pairlab.adapters.mcp_ledger.db`` and validates every row through
:mod:`pairlab.core.accounting.ledger_rules`.
"""

from __future__ import annotations

from pairlab.core.accounting.tokenizer import TokenCounter, load_token_counter

__all__ = ["TokenCounter", "load_token_counter"]
