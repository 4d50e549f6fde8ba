"""What differs between the two model endpoints, for the one pipeline in ``model_api``.

Anthropic ``/v1/messages`` and OpenAI ``/v1/responses`` go through the same steps
(parse, count, script, admit, cache, answer, bill on delivery); a :class:`ProviderApi`
holds each provider's part of them: how a request is cut into prompt blocks and read
as a conversation, which prompt cache it uses, how the answer and its headers are
shaped (the ``*_wire`` modules), where a cut stream stops by default, and how a
stated usage object is read back (``core.emulator.usage``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, Protocol

from pairlab.adapters.emulator import anthropic_wire, openai_wire
from pairlab.adapters.emulator.episodes import Account
from pairlab.adapters.emulator.reply import Refusal, Reply
from pairlab.core.emulator.conversation import (
    Conversation,
    claude_conversation,
    codex_conversation,
)
from pairlab.core.emulator.prompt_blocks import (
    PromptLayout,
    TokenCount,
    anthropic_layout,
    openai_layout,
)
from pairlab.core.emulator.prompt_cache import CacheUsage
from pairlab.core.emulator.quota_model import QuotaSnapshot
from pairlab.core.emulator.quota_surfaces import anthropic_unified_headers, codex_headers
from pairlab.core.emulator.request_ledger import Fault
from pairlab.core.emulator.scripted_model import ModelTurn
from pairlab.core.emulator.usage import (
    anthropic_usage,
    anthropic_vector,
    openai_usage,
    openai_vector,
)
from pairlab.core.schemas.usage import UsageVector

Provider = Literal["anthropic", "openai"]


class Wire(Protocol):
    """A provider's wire format (the ``anthropic_wire`` and ``openai_wire`` modules)."""

    def stream_events(self, full: dict[str, Any]) -> list[dict[str, Any]]: ...

    def stated_usage(self, events: list[dict[str, Any]], sent: int) -> dict[str, Any] | None: ...

    def error_reply(self, refusal: Refusal, request_id: str) -> Reply: ...

    def invalid(self, message: str, param: str | None = None) -> Refusal: ...

    def fault_refusal(self, fault: Fault) -> Refusal | None: ...

    def quota_refusal(self, window: str, wait_s: int) -> Refusal: ...


class ProviderApi(Protocol):
    """One provider's side of the model-request pipeline."""

    @property
    def name(self) -> Provider: ...

    @property
    def wire(self) -> Wire: ...

    def layout(self, body: Mapping[str, Any], count: TokenCount) -> PromptLayout: ...

    def conversation(self, body: Mapping[str, Any]) -> Conversation: ...

    def system_prompt(self, body: Mapping[str, Any]) -> object | None:
        """The request's base prompt (the ledger keeps its hash)."""
        ...

    def cache_key(self, body: Mapping[str, Any]) -> str | None:
        """The request's cache scope beyond the account (OpenAI's ``prompt_cache_key``)."""
        ...

    def cache(
        self, account: Account, layout: PromptLayout, key: str | None, now: float, *, commit: bool
    ) -> CacheUsage:
        """Account the request's prompt caching (``commit=False``: leave no trace where
        the provider keeps none)."""
        ...

    def answer(
        self,
        turn: ModelTurn,
        cache: CacheUsage,
        ids: Callable[[str], str],
        body: Mapping[str, Any],
        request_headers: Mapping[str, str],
        now: float,
        count: TokenCount,
    ) -> dict[str, Any]:
        """The whole answer (message or response) with its stated usage."""
        ...

    def headers(
        self, request_id: str, oauth: bool, model: str, before: QuotaSnapshot
    ) -> dict[str, str]: ...

    def default_cut(self, events: list[dict[str, Any]]) -> int:
        """How many SSE events a cut stream sends unless the fault says."""
        ...

    def usage_vector(self, wire: dict[str, Any]) -> UsageVector: ...


class AnthropicApi:
    @property
    def name(self) -> Provider:
        return "anthropic"

    @property
    def wire(self) -> Wire:
        return anthropic_wire

    def layout(self, body: Mapping[str, Any], count: TokenCount) -> PromptLayout:
        return anthropic_layout(body, count)

    def conversation(self, body: Mapping[str, Any]) -> Conversation:
        return claude_conversation(body)

    def system_prompt(self, body: Mapping[str, Any]) -> object | None:
        return body.get("system")

    def cache_key(self, body: Mapping[str, Any]) -> str | None:
        return None

    def cache(
        self, account: Account, layout: PromptLayout, key: str | None, now: float, *, commit: bool
    ) -> CacheUsage:
        return account.anthropic_cache.process(layout, now, commit=commit)

    def answer(
        self,
        turn: ModelTurn,
        cache: CacheUsage,
        ids: Callable[[str], str],
        body: Mapping[str, Any],
        request_headers: Mapping[str, str],
        now: float,
        count: TokenCount,
    ) -> dict[str, Any]:
        blocks = anthropic_wire.content_blocks(turn, ids("toolu"))
        beta = request_headers.get("anthropic-beta", "")
        usage = anthropic_usage(cache, blocks, count, anthropic_beta=beta)
        return anthropic_wire.message(
            message_id=ids("msg"), model=body["model"], blocks=blocks, usage=usage
        )

    def headers(
        self, request_id: str, oauth: bool, model: str, before: QuotaSnapshot
    ) -> dict[str, str]:
        headers = {"request-id": request_id}
        if oauth:  # unified rate limits go to subscription traffic
            headers.update(anthropic_unified_headers(before))
        return headers

    def default_cut(self, events: list[dict[str, Any]]) -> int:
        return anthropic_wire.DEFAULT_CUT_AFTER_EVENTS

    def usage_vector(self, wire: dict[str, Any]) -> UsageVector:
        return anthropic_vector(wire)


class OpenAIApi:
    @property
    def name(self) -> Provider:
        return "openai"

    @property
    def wire(self) -> Wire:
        return openai_wire

    def layout(self, body: Mapping[str, Any], count: TokenCount) -> PromptLayout:
        return openai_layout(body, count)

    def conversation(self, body: Mapping[str, Any]) -> Conversation:
        return codex_conversation(body)

    def system_prompt(self, body: Mapping[str, Any]) -> object | None:
        # Codex sends its base prompt as the first developer message
        return body.get("instructions") or next(
            (
                item.get("content")
                for item in body.get("input") or []
                if isinstance(item, dict) and item.get("role") in ("developer", "system")
            ),
            None,
        )

    def cache_key(self, body: Mapping[str, Any]) -> str | None:
        key = body.get("prompt_cache_key")
        return key if isinstance(key, str) else None

    def cache(
        self, account: Account, layout: PromptLayout, key: str | None, now: float, *, commit: bool
    ) -> CacheUsage:
        # OpenAI charges no cache writes: even a cut request's prefix is cached for free
        return account.openai_cache.process(layout, key, now)

    def answer(
        self,
        turn: ModelTurn,
        cache: CacheUsage,
        ids: Callable[[str], str],
        body: Mapping[str, Any],
        request_headers: Mapping[str, str],
        now: float,
        count: TokenCount,
    ) -> dict[str, Any]:
        items = openai_wire.output_items(turn, ids)
        return openai_wire.response(
            response_id=ids("resp"),
            model=body["model"],
            created_at=int(now),
            output=items,
            usage=openai_usage(cache, items, count),
            status="completed",
        )

    def headers(
        self, request_id: str, oauth: bool, model: str, before: QuotaSnapshot
    ) -> dict[str, str]:
        return {
            "x-request-id": request_id,
            "openai-model": model,  # Codex reports a reroute without it
            **codex_headers(before),
        }

    def default_cut(self, events: list[dict[str, Any]]) -> int:
        return openai_wire.default_cut_point(events)

    def usage_vector(self, wire: dict[str, Any]) -> UsageVector:
        return openai_vector(wire)


PROVIDERS: Final[dict[Provider, ProviderApi]] = {
    "anthropic": AnthropicApi(),
    "openai": OpenAIApi(),
}

__all__ = ["PROVIDERS", "AnthropicApi", "OpenAIApi", "Provider", "ProviderApi", "Wire"]
