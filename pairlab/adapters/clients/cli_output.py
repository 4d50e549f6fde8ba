"""What the real CLIs print on stdout, read back: the final answer and the CLI's own usage.

* Claude Code ``-p --output-format stream-json --verbose`` (or ``json``) ends with a
  ``{"type": "result", "result": <final text>, "usage": {...}, "modelUsage": {...}}``
  object; its ``usage`` is the session's aggregate (deduplicated by Claude Code),
  with the 5m/1h cache-write split.
* Codex ``exec --json`` prints ``item.completed`` events (``agent_message`` items carry
  the text) and ``turn.completed`` with the thread's **cumulative** usage
  (``input_tokens`` includes cached and written tokens).

Lines that are not JSON objects are skipped; a missing answer or usage is None.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pairlab.adapters.usage.claude import claude_vector
from pairlab.adapters.usage.codex import codex_vector
from pairlab.core.schemas.usage import UsageVector


def json_lines(stdout: str) -> Iterator[dict[str, Any]]:
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


def _claude_result(stdout: str) -> dict[str, Any] | None:
    results = [o for o in json_lines(stdout) if o.get("type") == "result"]
    return results[-1] if results else None


def claude_final_answer(stdout: str) -> str | None:
    result = _claude_result(stdout)
    text = result.get("result") if result else None
    return text if isinstance(text, str) else None


def claude_result_usage(stdout: str) -> UsageVector | None:
    """The 7-dimension vector of Claude Code's own result ``usage``."""
    result = _claude_result(stdout)
    usage = result.get("usage") if result else None
    return claude_vector(usage) if isinstance(usage, dict) else None


def codex_final_answer(stdout: str) -> str | None:
    answer = None
    for obj in json_lines(stdout):
        item = obj.get("item")
        if (
            obj.get("type") == "item.completed"
            and isinstance(item, dict)
            and item.get("type") == "agent_message"
            and isinstance(item.get("text"), str)
        ):
            answer = item["text"]
    return answer


def codex_turn_usage(stdout: str) -> UsageVector | None:
    """The vector of the last ``turn.completed`` usage (cumulative for the thread)."""
    usage = None
    for obj in json_lines(stdout):
        if obj.get("type") == "turn.completed" and isinstance(obj.get("usage"), dict):
            usage = obj["usage"]
    if usage is None:
        return None
    fields = (
        "input_tokens",
        "cached_input_tokens",
        "cache_write_input_tokens",
        "output_tokens",
        "reasoning_output_tokens",
    )
    return codex_vector({f: usage[f] if isinstance(usage.get(f), int) else None for f in fields})


__all__ = [
    "claude_final_answer",
    "claude_result_usage",
    "codex_final_answer",
    "codex_turn_usage",
    "json_lines",
]
