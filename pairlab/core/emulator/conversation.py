"""What a model request tells the scripted model: the tools offered, the calls made so far
and their results, and the working directory -- read from the request alone.

Each request carries the whole conversation (both CLIs resend the history), so the
scripted model is a pure function of the request: no per-episode memory is needed,
and a retried request gets the same answer.

* Claude Code: ``tools`` (a tool with ``defer_loading`` is not callable yet); deferred
  tools are also listed by name in a message after "deferred tools are now available
  via ToolSearch"; a ``ToolSearch`` result returns ``<function>{json}</function>``
  definitions, which makes those tools callable. Calls are ``tool_use`` blocks of
  assistant messages, results ``tool_result`` blocks of user messages.
* Codex: ``tools`` of type ``function`` / ``custom`` / ``namespace`` (MCP servers, whose
  functions are called with a ``namespace``) and ``tool_search``; a
  ``tool_search_output`` item in the input makes its tools callable. Calls are
  ``function_call`` / ``custom_tool_call`` / ``tool_search_call`` items, results the
  matching ``*_output`` items.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

Dialect = Literal["claude", "codex"]

CLAUDE_SEARCH_TOOL: Final = "ToolSearch"
CODEX_SEARCH_TOOL: Final = "tool_search"
_DEFERRED_INTRO = re.compile(r"deferred tools are now available via ToolSearch[^\n]*\n", re.I)
_FUNCTION_DEF = re.compile(r"<function>(\{.*?\})</function>", re.S)
_CLAUDE_CWD = re.compile(r"Primary working directory:\s*(\S+)")
_CODEX_CWD = re.compile(r"<cwd>([^<]+)</cwd>")
# How each CLI marks a tool result it did not pass to the model whole (measured against
# the emulator, issue 26 item 6): Claude Code 2.x refuses one above MAX_MCP_OUTPUT_TOKENS
# (25,000 tokens, counted with the provider's count_tokens) -- "Error: result (N
# characters across M lines) exceeds maximum allowed tokens. Output has been saved to
# <file>" -- and persists one above 50,000 characters to a file, sending a 2 KB preview
# ("<persisted-output>"); Codex 0.163.0 keeps ~48,000 characters of an MCP text output,
# head and tail, with "…N tokens truncated…" between.
_CUT_MARKS = re.compile(
    r"^Error: result \([\d,]+ characters across [\d,]+ lines\) exceeds maximum allowed tokens"
    r"|^<persisted-output>\s*Output too large"
    r"|…[\d,]+ tokens truncated…"
)


@dataclass(frozen=True)
class ToolRef:
    """A callable tool: ``name`` as the model calls it, ``namespace`` for Codex MCP tools."""

    name: str
    namespace: str | None = None
    kind: Literal["function", "custom"] = "function"

    @property
    def qualified(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True)
class PastCall:
    name: str  # qualified (namespace/name) for Codex namespaced tools
    arguments: Any  # a dict for JSON tools, the raw text for custom tools
    output: str | None  # None while no result came back
    is_error: bool = False


@dataclass(frozen=True)
class Conversation:
    dialect: Dialect
    tools: tuple[ToolRef, ...]  # callable now
    deferred: frozenset[str]  # discoverable through the search tool (qualified names)
    search_tool: str | None
    history: tuple[PastCall, ...]
    cwd: str | None
    offered_names: tuple[str, ...]  # every tool name the request offers (for the ledger)
    search_hint: str = ""  # what the search tool says it can find (Codex names MCP servers)

    def find(self, qualified: str) -> ToolRef | None:
        for tool in self.tools:
            if tool.qualified == qualified:
                return tool
        return None

    def has(self, qualified: str) -> bool:
        return self.find(qualified) is not None


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
                elif part.get("type") == "tool_reference" and isinstance(
                    part.get("tool_name"), str
                ):
                    parts.append(f"<tool_reference>{part['tool_name']}</tool_reference>")
        return "\n".join(parts)
    return ""


def _loaded_by_search(texts: Iterable[str]) -> set[str]:
    names: set[str] = set()
    for text in texts:
        for match in _FUNCTION_DEF.finditer(text):
            try:
                spec = json.loads(match.group(1))
            except ValueError:
                continue
            if isinstance(spec, dict) and isinstance(spec.get("name"), str):
                names.add(spec["name"])
        names.update(re.findall(r"<tool_reference>([^<]+)</tool_reference>", text))
    return names


def _deferred_listing(text: str) -> set[str]:
    match = _DEFERRED_INTRO.search(text)
    if not match:
        return set()
    names: set[str] = set()
    for line in text[match.end() :].splitlines():
        line = line.strip()
        if not line or " " in line:
            break
        names.add(line)
    return names


def claude_conversation(body: Mapping[str, Any]) -> Conversation:
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    direct = {
        t["name"] for t in tools if isinstance(t.get("name"), str) and not t.get("defer_loading")
    }
    deferred = {
        t["name"] for t in tools if isinstance(t.get("name"), str) and t.get("defer_loading")
    }
    texts: list[str] = []
    calls: list[tuple[str, str, Any]] = []  # (id, name, input)
    results: dict[str, tuple[str, bool]] = {}
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "tool_use" and message.get("role") == "assistant":
                calls.append((str(block.get("id")), str(block.get("name")), block.get("input")))
            elif kind == "tool_result":
                text = _text_of(block.get("content"))
                texts.append(text)
                results[str(block.get("tool_use_id"))] = (text, bool(block.get("is_error")))
    for text in texts:
        deferred |= _deferred_listing(text)
    loaded = _loaded_by_search(r[0] for r in results.values())
    callable_names = direct | (loaded & (deferred | loaded))
    history = tuple(
        PastCall(name, args, *(results.get(cid, (None, False)))) for cid, name, args in calls
    )
    cwd = next((m.group(1) for t in texts if (m := _CLAUDE_CWD.search(t))), None)
    if cwd is None:
        system = body.get("system")
        cwd = next((m.group(1) for t in [_text_of(system)] if (m := _CLAUDE_CWD.search(t))), None)
    return Conversation(
        dialect="claude",
        tools=tuple(ToolRef(n) for n in sorted(callable_names)),
        deferred=frozenset(deferred - callable_names),
        search_tool=CLAUDE_SEARCH_TOOL if CLAUDE_SEARCH_TOOL in direct else None,
        history=history,
        cwd=cwd,
        offered_names=tuple(sorted(direct | deferred)),
    )


def _codex_tool_refs(specs: Iterable[Any], namespace: str | None = None) -> list[ToolRef]:
    refs: list[ToolRef] = []
    for spec in specs:
        if not isinstance(spec, dict):
            continue
        kind, name = spec.get("type"), spec.get("name")
        if kind == "namespace" and isinstance(name, str):
            refs.extend(_codex_tool_refs(spec.get("tools") or [], namespace=name))
        elif kind in ("function", "custom") and isinstance(name, str):
            ns = spec.get("namespace") if isinstance(spec.get("namespace"), str) else namespace
            refs.append(ToolRef(name, ns, "custom" if kind == "custom" else "function"))
    return refs


def _codex_output_text(output: object) -> tuple[str, bool]:
    if isinstance(output, str):
        return output, False
    if isinstance(output, dict):  # {"content": ..., "success": bool}
        text = _text_of(output.get("content")) or str(output.get("content") or "")
        return text, output.get("success") is False
    return _text_of(output), False


def codex_conversation(body: Mapping[str, Any]) -> Conversation:
    specs = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    refs = _codex_tool_refs(specs)
    search = CODEX_SEARCH_TOOL if any(t.get("type") == "tool_search" for t in specs) else None
    calls: list[tuple[str, str, Any]] = []
    results: dict[str, tuple[str, bool]] = {}
    cwd: str | None = None
    raw_input = body.get("input")
    for item in raw_input if isinstance(raw_input, list) else []:
        if not isinstance(item, dict):
            continue
        kind, call_id = item.get("type"), str(item.get("call_id"))
        if kind == "message" or (kind is None and "role" in item):
            match = _CODEX_CWD.search(_text_of(item.get("content")))
            cwd = cwd or (match.group(1).strip() if match else None)
        elif kind == "function_call":
            name = str(item.get("name"))
            ns = item.get("namespace")
            args: Any = item.get("arguments")
            with contextlib.suppress(ValueError):
                args = json.loads(args) if isinstance(args, str) else args
            calls.append((call_id, f"{ns}/{name}" if isinstance(ns, str) else name, args))
        elif kind == "custom_tool_call":
            calls.append((call_id, str(item.get("name")), item.get("input")))
        elif kind == "tool_search_call":
            calls.append((call_id, CODEX_SEARCH_TOOL, item.get("arguments")))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            results[call_id] = _codex_output_text(item.get("output"))
        elif kind == "tool_search_output":
            found = _codex_tool_refs(item.get("tools") or [])
            refs.extend(r for r in found if r not in refs)
            results[call_id] = (
                " ".join(r.qualified for r in found) or "no tools found",
                False,
            )
    history = tuple(
        PastCall(name, args, *(results.get(cid, (None, False)))) for cid, name, args in calls
    )
    offered = {r.qualified for r in _codex_tool_refs(specs)} | ({search} if search else set())
    return Conversation(
        dialect="codex",
        tools=tuple(dict.fromkeys(refs)),
        deferred=frozenset(),
        search_tool=search,
        history=history,
        cwd=cwd,
        offered_names=tuple(sorted(offered)),
        search_hint=tool_search_sources(body),
    )


def is_cut_result(text: str | None) -> bool:
    """Whether a tool result, as the CLI sent it back, carries the CLI's mark of a payload
    it did not pass whole (refused, persisted to a file with a preview, or truncated)."""
    return text is not None and _CUT_MARKS.search(text.lstrip()) is not None


def cut_results(conv: Conversation) -> list[str]:
    """The calls of the request's history (qualified names, in order) whose result the
    CLI cut (:func:`is_cut_result`)."""
    return [p.name for p in conv.history if is_cut_result(p.output)]


def tool_search_sources(body: Mapping[str, Any]) -> str:
    """The text of Codex's tool_search description (it names the servers it can search)."""
    for spec in body.get("tools") or []:
        if isinstance(spec, dict) and spec.get("type") == "tool_search":
            return str(spec.get("description") or "")
    return ""


__all__ = [
    "CLAUDE_SEARCH_TOOL",
    "CODEX_SEARCH_TOOL",
    "Conversation",
    "Dialect",
    "PastCall",
    "ToolRef",
    "claude_conversation",
    "codex_conversation",
    "cut_results",
    "is_cut_result",
    "tool_search_sources",
]
