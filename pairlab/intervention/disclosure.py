"""Progressive disclosure as text: the preview of a large file, and line ranges for ``expand``.

A preview is the file's first lines (whole lines, up to a token budget), an
outline of its definition lines with their line numbers, and the line
``expansion reference: sha256:<hex of the full content>``. Lines keep their own
line endings everywhere, so an expansion of every line is the file, byte for byte.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Final

REF_PREFIX: Final = "sha256:"
REF_LINE_PREFIX: Final = "expansion reference: "
MAX_OUTLINE_ENTRIES: Final = 80
MAX_OUTLINE_LINE_CHARS: Final = 160
# Definition lines across common languages (Python, JS/TS, Go, Rust, Java/C#, shell).
_DEFINITION: Final = re.compile(
    r"^\s*(?:"
    r"(?:async\s+)?def\s|class\s|"
    r"(?:export\s+)?(?:default\s+)?(?:async\s+)?function\b|(?:export\s+)?(?:abstract\s+)?class\s|"
    r"(?:export\s+)?(?:interface|type|enum)\s|"
    r"func\s|(?:pub(?:\(\w+\))?\s+)?(?:fn|struct|enum|trait|impl|mod)\b|"
    r"(?:public|private|protected|internal)\s+(?:static\s+)?[\w<>\[\], ]+\s+\w+\s*\("
    r")"
)


def split_lines(text: str) -> list[str]:
    """Lines split at ``\n`` only (as editors and the clients' own Read tools number them),
    each keeping its ending; ``"".join(split_lines(t)) == t``."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def content_ref(text: str) -> str:
    """The content-addressed reference of ``text`` (its UTF-8 bytes)."""
    return REF_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()


def outline(lines: list[str]) -> list[tuple[int, str]]:
    """(1-based line number, stripped line) of every definition line."""
    found: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        if _DEFINITION.match(line):
            found.append((number, line.rstrip("\r\n")))
    return found


def head_lines(lines: list[str], budget_tokens: int, count: Callable[[str], int]) -> list[str]:
    """The longest run of whole first lines within ``budget_tokens``."""
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = count(line)
        if used + cost > budget_tokens:
            break
        kept.append(line)
        used += cost
    return kept


def build_preview(
    label: str,
    text: str,
    ref: str,
    *,
    total_tokens: int,
    head_budget_tokens: int,
    count: Callable[[str], int],
) -> str:
    """The preview text for ``label`` (see the module docstring)."""
    lines = split_lines(text)
    head = head_lines(lines, head_budget_tokens, count)
    entries = outline(lines)
    shown = entries[:MAX_OUTLINE_ENTRIES]
    parts = [
        f"[token-optimizer] preview of {label}: {len(lines)} lines, {total_tokens} tokens "
        f"(cl100k); the first {len(head)} lines and an outline follow.\n",
        f"{REF_LINE_PREFIX}{ref}\n",
        "For the full text call expand with this reference "
        "(optionally start_line/end_line, 1-based, inclusive).\n",
        f"--- lines 1-{len(head)} ---\n",
    ]
    body = "".join(head)
    parts.append(body if body.endswith("\n") or not body else body + "\n")
    parts.append(f"--- outline: {len(entries)} definition lines ---\n")
    for number, line in shown:
        parts.append(f"L{number}: {line.strip()[:MAX_OUTLINE_LINE_CHARS]}\n")
    if len(entries) > len(shown):
        parts.append(f"... {len(entries) - len(shown)} more definition lines\n")
    return "".join(parts)


def select_lines(text: str, start_line: object, end_line: object) -> str:
    """Lines ``start_line``..``end_line`` (1-based, inclusive, clamped to the end) of ``text``.

    Raises ValueError with a message for the model when the range is invalid."""
    lines = split_lines(text)
    start = 1 if start_line is None else start_line
    end = len(lines) if end_line is None else end_line
    for name, value in (("start_line", start), ("end_line", end)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1")
    assert isinstance(start, int) and isinstance(end, int)
    if start > max(len(lines), 1):
        raise ValueError(f"start_line {start} is beyond the last line ({len(lines)})")
    if start > end:
        raise ValueError(f"start_line {start} is after end_line {end}")
    return "".join(lines[start - 1 : end])
