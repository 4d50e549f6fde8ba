"""The tool table: every tool the server can offer, and which arms get which.

The baseline arm gets no tool; optimizer the disclosure tools; retrieval adds
``recall`` and ``rate_finding``; full adds the harvest tool ``wiki_write``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pairlab.intervention.disclosure_tools import DISCLOSURE_TOOLS
from pairlab.intervention.finding_tools import FINDING_TOOLS
from pairlab.intervention.tools import Tool

TOOL_TABLE: Final[tuple[Tool, ...]] = (*DISCLOSURE_TOOLS, *FINDING_TOOLS)


def tools_for_arm(arm: str, table: Sequence[Tool] = TOOL_TABLE) -> dict[str, Tool]:
    """The tools offered to ``arm``, by name, in table order."""
    return {tool.name: tool for tool in table if arm in tool.arms}
