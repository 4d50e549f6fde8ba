"""A model request as the provider processes it: an ordered list of prompt blocks.

Usage and prompt caching are computed from the request bytes a CLI actually sent.
Each provider's request is cut into blocks in the order the provider reads them:

* Anthropic Messages: ``tools`` (one block per tool; a tool with
  ``defer_loading: true`` is not in the prompt until a ``tool_reference`` names it),
  then ``system`` (one block per text block), then ``messages`` (one block per
  content block, a string content being one text block). A ``tool_reference`` inside
  a ``tool_result`` expands to the referenced tool's definition, as the API does.
* OpenAI Responses: ``instructions``, then ``tools`` (one block per tool), then
  ``input`` (one block per item; a string input is one user message).

A block's text is its compact JSON with sorted keys and without ``cache_control``
(moving a breakpoint does not change the prompt); its tokens are counted with the
local cl100k counter (an estimate of the provider's tokenizer; see
``accounting.tokenizer``). ``cache_control`` breakpoints (Anthropic) are kept with
their TTL. A malformed request raises :class:`MalformedRequest`, which the emulator
turns into the provider's own error shape.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pairlab.core.errors import InvalidInputError, ReasonCode

TokenCount = Callable[[str], int]

MAX_BREAKPOINTS: Final = 4
TTL_SECONDS: Final = {"5m": 300, "1h": 3600}


class MalformedRequest(InvalidInputError):
    """A request the provider would refuse with HTTP 400 (``param`` names the field)."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message, reason=ReasonCode.MALFORMED_INPUT)
        self.param = param


@dataclass(frozen=True, slots=True)
class PromptBlock:
    section: str  # tools | system | messages | instructions | input
    digest: str  # sha256 of the block's canonical text
    tokens: int


@dataclass(frozen=True, slots=True)
class Breakpoint:
    boundary: int  # blocks in the cached prefix (the marked block's index + 1)
    ttl_s: int


@dataclass(frozen=True)
class PromptLayout:
    blocks: tuple[PromptBlock, ...]
    breakpoints: tuple[Breakpoint, ...] = ()

    @property
    def total_tokens(self) -> int:
        return self.cumulative_tokens[-1]

    @property
    def cumulative_tokens(self) -> tuple[int, ...]:
        """``[j]`` = tokens of the first ``j`` blocks (length = blocks + 1)."""
        out = [0]
        for block in self.blocks:
            out.append(out[-1] + block.tokens)
        return tuple(out)

    @property
    def prefix_digests(self) -> tuple[str, ...]:
        """``[j]`` = identity of the first ``j`` blocks (a hash chain; ``[0]`` is empty)."""
        out = [""]
        for block in self.blocks:
            out.append(hashlib.sha256(f"{out[-1]}|{block.digest}".encode()).hexdigest())
        return tuple(out)


def canonical_text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _without_cache_control(value: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k != "cache_control"}


class _Builder:
    def __init__(self, count: TokenCount) -> None:
        self.count = count
        self.blocks: list[PromptBlock] = []
        self.breakpoints: list[Breakpoint] = []
        self.last_ttl: int | None = None

    def add(self, section: str, value: object) -> None:
        text = canonical_text(value)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        self.blocks.append(PromptBlock(section, digest, self.count(text)))

    def mark(self, raw: Mapping[str, Any], where: str) -> None:
        control = raw.get("cache_control")
        if control is None:
            return
        if not isinstance(control, dict) or control.get("type") != "ephemeral":
            raise MalformedRequest(
                f"{where}.cache_control: Input should be {{'type': 'ephemeral'}}",
                param=f"{where}.cache_control",
            )
        ttl = control.get("ttl", "5m")
        if ttl not in TTL_SECONDS:
            raise MalformedRequest(
                f"{where}.cache_control.ttl: Input should be '5m' or '1h'",
                param=f"{where}.cache_control.ttl",
            )
        ttl_s = TTL_SECONDS[ttl]
        if self.last_ttl is not None and ttl_s > self.last_ttl:
            raise MalformedRequest(
                "a ttl='1h' cache_control block must not come after a ttl='5m' "
                "cache_control block (longer TTLs first)",
                param=f"{where}.cache_control.ttl",
            )
        self.last_ttl = ttl_s
        self.breakpoints.append(Breakpoint(len(self.blocks), ttl_s))
        if len(self.breakpoints) > MAX_BREAKPOINTS:
            raise MalformedRequest(
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {len(self.breakpoints)}."
            )

    def layout(self) -> PromptLayout:
        return PromptLayout(tuple(self.blocks), tuple(self.breakpoints))


def _require_list(body: Mapping[str, Any], key: str, *, required: bool) -> list[Any]:
    value = body.get(key)
    if value is None:
        if required:
            raise MalformedRequest(f"{key}: Field required", param=key)
        return []
    if not isinstance(value, list):
        raise MalformedRequest(f"{key}: Input should be a valid list", param=key)
    return value


def _content_blocks(content: object, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise MalformedRequest(f"{where}.content: Input should be a valid list", param=where)
    for i, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise MalformedRequest(
                f"{where}.content.{i}: each content block needs a 'type'", param=where
            )
    return content


def anthropic_tool_defs(body: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Tools by name, as offered (deferred ones included)."""
    tools = _require_list(body, "tools", required=False)
    out: dict[str, dict[str, Any]] = {}
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise MalformedRequest(f"tools.{i}.name: Field required", param=f"tools.{i}.name")
        out[tool["name"]] = tool
    return out


def _expand_references(
    block: dict[str, Any], tools: Mapping[str, dict[str, Any]]
) -> dict[str, Any]:
    """A tool_result whose content holds tool_reference blocks: the API expands each
    reference to the referenced tool's definition at that point of the prompt."""
    content = block.get("content")
    if block.get("type") != "tool_result" or not isinstance(content, list):
        return block
    expanded = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "tool_reference":
            tool = tools.get(str(part.get("tool_name")))
            expanded.append(
                {"type": "tool_reference", "tool": _without_cache_control(tool)} if tool else part
            )
        else:
            expanded.append(part)
    return {**block, "content": expanded}


def anthropic_layout(body: Mapping[str, Any], count: TokenCount) -> PromptLayout:
    """Blocks of a Messages request: tools, system, messages (raises MalformedRequest)."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise MalformedRequest("model: Field required", param="model")
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise MalformedRequest(
            "max_tokens: Field required (a positive integer)", param="max_tokens"
        )
    messages = _require_list(body, "messages", required=True)
    if not messages:
        raise MalformedRequest("messages: at least one message is required", param="messages")
    tools = anthropic_tool_defs(body)
    b = _Builder(count)
    for i, tool in enumerate(body.get("tools") or []):
        if tool.get("defer_loading") is True:
            continue  # not in the prompt until a tool_reference names it
        b.add("tools", _without_cache_control(tool))
        b.mark(tool, f"tools.{i}")
    system = body.get("system")
    if system is not None:
        for i, block in enumerate(_content_blocks(system, "system")):
            b.add("system", _without_cache_control(block))
            b.mark(block, f"system.{i}")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in (
            "user",
            "assistant",
            "system",
        ):
            raise MalformedRequest(
                f"messages.{i}.role: Input should be 'user' or 'assistant'", param=f"messages.{i}"
            )
        for j, block in enumerate(_content_blocks(message.get("content"), f"messages.{i}")):
            plain = _expand_references(_without_cache_control(block), tools)
            b.add("messages", {"role": message["role"], "content": plain})
            b.mark(block, f"messages.{i}.content.{j}")
    return b.layout()


def openai_layout(body: Mapping[str, Any], count: TokenCount) -> PromptLayout:
    """Blocks of a Responses request: instructions, tools, input items."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise MalformedRequest("Missing required parameter: 'model'.", param="model")
    raw_input = body.get("input")
    if isinstance(raw_input, str):
        items: Sequence[Any] = [{"role": "user", "content": raw_input}]
    elif isinstance(raw_input, list):
        items = raw_input
    else:
        raise MalformedRequest("Missing required parameter: 'input'.", param="input")
    b = _Builder(count)
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        b.add("instructions", {"instructions": instructions})
    for i, tool in enumerate(_require_list(body, "tools", required=False)):
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            raise MalformedRequest(
                f"Missing required parameter: 'tools[{i}].type'.", param=f"tools[{i}]"
            )
        b.add("tools", tool)
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise MalformedRequest(
                f"Invalid type for 'input[{i}]': expected an object.", param=f"input[{i}]"
            )
        b.add("input", item)
    return b.layout()


__all__ = [
    "MAX_BREAKPOINTS",
    "TTL_SECONDS",
    "Breakpoint",
    "MalformedRequest",
    "PromptBlock",
    "PromptLayout",
    "TokenCount",
    "anthropic_layout",
    "anthropic_tool_defs",
    "canonical_text",
    "openai_layout",
]
