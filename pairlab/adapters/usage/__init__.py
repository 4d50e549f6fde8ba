"""Usage readers: provider-native records of one episode -> the normalised vector.

``read_usage(client, paths)`` is the entry point; one reader per client lives in
its own module (claude, codex, gemini, copilot), sharing ``base``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pairlab.adapters.usage.base import ModelUsage, UsageReader, UsageReport, expand_paths
from pairlab.adapters.usage.claude import ClaudeReader
from pairlab.adapters.usage.codex import CodexReader
from pairlab.adapters.usage.copilot import CopilotReader
from pairlab.adapters.usage.gemini import GeminiReader
from pairlab.core.errors import InvalidInputError, ReasonCode

READERS: dict[str, type[UsageReader]] = {
    "claude": ClaudeReader,
    "codex": CodexReader,
    "gemini": GeminiReader,
    "copilot": CopilotReader,
}


def make_reader(client: str) -> UsageReader:
    try:
        return READERS[client]()
    except KeyError:
        raise InvalidInputError(
            f"unknown client {client!r}; expected one of {', '.join(READERS)}",
            reason=ReasonCode.INVALID_INPUT,
        ) from None


def read_usage(client: str, paths: Sequence[Path]) -> UsageReport:
    """All files together are one episode (dedupe and replay rules span files)."""
    return make_reader(client).read([Path(p) for p in paths])


__all__ = [
    "READERS",
    "ModelUsage",
    "UsageReader",
    "UsageReport",
    "expand_paths",
    "make_reader",
    "read_usage",
]
