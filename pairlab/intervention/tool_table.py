"""The tool table: every tool the server can offer, and which arms get which.

The baseline arm gets no tool. Issue 18 adds its retrieval (``recall``) and
harvest (``wiki_write``, ``rate_finding``) tools as more rows here, each with
its own arms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pairlab.intervention.disclosure_tools import DISCLOSURE_TOOLS
from pairlab.intervention.tools import Tool

TOOL_TABLE: Final[tuple[Tool, ...]] = (*DISCLOSURE_TOOLS,)


def tools_for_arm(arm: str, table: Sequence[Tool] = TOOL_TABLE) -> dict[str, Tool]:
    """The tools offered to ``arm``, by name, in table order."""
    return {tool.name: tool for tool in table if arm in tool.arms}
