"""The model endpoints: Anthropic ``/v1/messages`` (+ ``count_tokens``) and OpenAI
``/v1/responses``, for one registered episode.

For each model request: parse and validate (a malformed one gets the provider's 400
shape), cut it into prompt blocks and count them, let the scripted model choose its
turn from the request, apply an injected fault if one is planned for this request,
refuse it if the account's quota is exhausted, account its prompt caching, and answer
(SSE or JSON). The quota is charged and the ledger row written only when the
response has been delivered whole (``Reply.on_delivered``).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pairlab.adapters.emulator import anthropic_wire, openai_wire
from pairlab.adapters.emulator.episodes import Account, Episode, LedgerWriter
from pairlab.adapters.emulator.reply import Reply, json_reply, sse_frame
from pairlab.core.emulator.conversation import claude_conversation, codex_conversation
from pairlab.core.emulator.ledger import Fault, RequestRow, TurnInfo
from pairlab.core.emulator.prompt_blocks import (
    MalformedRequest,
    anthropic_layout,
    canonical_text,
    openai_layout,
)
from pairlab.core.emulator.quota_surfaces import anthropic_unified_headers, codex_headers
from pairlab.core.emulator.scripted_model import next_turn
from pairlab.core.schemas.usage import UsageVector

Provider = Literal["anthropic", "openai"]


@dataclass(frozen=True)
class Incoming:
    method: str
    path: str  # without the query string
    headers: Mapping[str, str]  # lower-cased names
    body: bytes


def auth_kind(headers: Mapping[str, str]) -> Literal["api-key", "oauth", "bearer", "none"]:
    bearer = headers.get("authorization", "")
    if bearer.lower().startswith("bearer "):
        return "oauth" if bearer[7:].strip().startswith("sk-ant-oat") else "bearer"
    return "api-key" if headers.get("x-api-key") else "none"


def _system_sha256(body: Mapping[str, Any], provider: Provider) -> str | None:
    if provider == "anthropic":
        system = body.get("system")
    else:  # Codex sends its base prompt as the first developer message
        system = body.get("instructions") or next(
            (
                item.get("content")
                for item in body.get("input") or []
                if isinstance(item, dict) and item.get("role") in ("developer", "system")
            ),
            None,
        )
    if system is None:
        return None
    return hashlib.sha256(canonical_text(system).encode()).hexdigest()


def keep_request(episode: Episode, seq: int, req: Incoming) -> None:
    """The request as received, for audits (certification reads what the CLI sent)."""
    folder = episode.ledger_path.with_suffix(".requests")
    folder.mkdir(exist_ok=True)
    (folder / f"{seq:04d}.json").write_bytes(req.body)


def anthropic_vector(wire: Mapping[str, Any]) -> UsageVector:
    """The 7 dimensions of an Anthropic usage object (what the Claude reader computes)."""
    split = wire.get("cache_creation") or {}
    details = wire.get("output_tokens_details")
    return UsageVector(
        uncached_input=wire["input_tokens"],
        cache_read=wire["cache_read_input_tokens"],
        cache_write_5m=split.get("ephemeral_5m_input_tokens"),
        cache_write_1h=split.get("ephemeral_1h_input_tokens"),
        output=wire["output_tokens"],
        reasoning=details.get("thinking_tokens") if isinstance(details, dict) else None,
    )


def openai_vector(wire: Mapping[str, Any]) -> UsageVector:
    """The 7 dimensions of a Responses usage object. OpenAI bills no cache writes and
    Codex records them as 0, so the write dimension is 0, not unknown."""
    cached = wire["input_tokens_details"]["cached_tokens"]
    return UsageVector(
        uncached_input=wire["input_tokens"] - cached,
        cache_read=cached,
        cache_write_generic=0,
        output=wire["output_tokens"],
        reasoning=wire["output_tokens_details"]["reasoning_tokens"],
    )


def _cut_after(fault: Fault | None, default: int) -> int | None:
    """How many SSE events a cut stream sends (None: no cut). A dropped connection cuts
    right after the headers unless told otherwise."""
    if fault is None or fault.kind != "cut-stream":
        return None
    if fault.cut_after_events is not None:
        return fault.cut_after_events
    return 0 if fault.cut_style == "drop" else default


def _sse_reply(
    events: list[dict[str, Any]], headers: dict[str, str], cut: int | None, fault: Fault | None
) -> Reply:
    return Reply(
        status=200,
        headers={"content-type": "text/event-stream", "cache-control": "no-cache", **headers},
        frames=[sse_frame(e) for e in events],
        cut_after=cut,
        cut_drops_connection=fault is not None and fault.cut_style == "drop",
    )


class ModelApi:
    def __init__(
        self,
        *,
        count: Callable[[str], int],
        clock: Callable[[], float],
        writer: LedgerWriter,
        state_lock: threading.Lock,
        keep_requests: bool = False,
    ) -> None:
        self.count, self.clock, self.writer, self.lock = count, clock, writer, state_lock
        self.keep_requests = keep_requests

    # -- shared ------------------------------------------------------------------
    def _ids(self, episode: Episode, seq: int) -> Callable[[str], str]:
        counter = iter(range(1_000_000))

        def mint(prefix: str) -> str:
            raw = f"{episode.token}:{seq}:{prefix}:{next(counter)}"
            return f"{prefix}_{hashlib.sha256(raw.encode()).hexdigest()[:24]}"

        return mint

    def _row(
        self, episode: Episode, req: Incoming, provider: Provider, index: int, rid: str
    ) -> RequestRow:
        return RequestRow(
            token=episode.token,
            request_index=index,
            request_id=rid,
            at=self.clock(),
            duration_ms=0.0,
            provider=provider,
            method=req.method,
            path=req.path,
            status=0,
            request_sha256=hashlib.sha256(req.body).hexdigest(),
            request_bytes=len(req.body),
            auth=auth_kind(req.headers),
        )

    def _write(
        self, episode: Episode, row: RequestRow, started: float, **update: Any
    ) -> RequestRow:
        final = row.model_copy(
            update={"duration_ms": (time.perf_counter() - started) * 1000, **update}
        )
        self.writer.append(episode.ledger_path, final)
        return final

    def _error(
        self,
        episode: Episode,
        row: RequestRow,
        started: float,
        provider: Provider,
        error_type: str,
        text: str,
        *,
        status: int | None = None,
        headers: dict[str, str] | None = None,
        fault: str | None = None,
        param: str | None = None,
        code: str | None = None,
    ) -> Reply:
        if provider == "anthropic":
            status = status or anthropic_wire.ERROR_STATUS.get(error_type, 400)
            payload = anthropic_wire.error_body(error_type, text, row.request_id)
            headers = {"request-id": row.request_id, **(headers or {})}
        else:
            status = status or openai_wire.ERROR_STATUS.get(error_type, 400)
            payload = openai_wire.error_body(error_type, text, param=param, code=code)
            headers = {"x-request-id": row.request_id, **(headers or {})}
        self._write(
            episode,
            row,
            started,
            status=status,
            error_type=error_type,
            error_message=text,
            fault=fault,
        )
        return json_reply(status, payload, headers)

    def _parse(self, req: Incoming) -> dict[str, Any]:
        try:
            body = json.loads(req.body or b"null")
        except ValueError as exc:
            raise MalformedRequest(f"The request body is not valid JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise MalformedRequest("The request body must be a JSON object.")
        return body

    def _fault_reply(
        self, episode: Episode, row: RequestRow, started: float, provider: Provider, fault: Fault
    ) -> Reply | None:
        retry = {"retry-after": str(fault.retry_after_s)}
        if fault.kind == "rate-limit-429":
            if provider == "anthropic":
                return self._error(
                    episode,
                    row,
                    started,
                    provider,
                    "rate_limit_error",
                    "This request would exceed your rate limit (emulated fault).",
                    headers={**retry, "x-should-retry": "true"},
                    fault=fault.kind,
                )
            return self._error(
                episode,
                row,
                started,
                provider,
                "requests",
                f"Rate limit reached for requests (emulated fault). Please try again in {fault.retry_after_s}s.",
                status=429,
                headers=retry,
                fault=fault.kind,
                code="rate_limit_exceeded",
            )
        if fault.kind == "overloaded-529":
            if provider == "anthropic":
                return self._error(
                    episode,
                    row,
                    started,
                    provider,
                    "overloaded_error",
                    "Overloaded (emulated fault).",
                    headers={"x-should-retry": "true"},
                    fault=fault.kind,
                )
            return self._error(
                episode,
                row,
                started,
                provider,
                "server_error",
                "The server is overloaded (emulated fault). Please try again.",
                status=503,
                headers=retry,
                fault=fault.kind,
                code="server_is_overloaded",
            )
        return None  # a cut stream is applied while answering

    def _quota_refusal(
        self,
        episode: Episode,
        row: RequestRow,
        started: float,
        provider: Provider,
        account: Account,
        now: float,
    ) -> Reply | None:
        window = account.quota.exhausted(now)
        if window is None:
            return None
        wait = str(max(1, int((window.resets_at or now) - now)))
        text = f"The {window.window} usage limit of this account is reached (emulated quota)."
        if provider == "anthropic":
            return self._error(
                episode,
                row,
                started,
                provider,
                "rate_limit_error",
                text,
                headers={"retry-after": wait},
            )
        return self._error(
            episode,
            row,
            started,
            provider,
            "usage_limit_reached",
            text,
            status=429,
            headers={"retry-after": wait},
            code="usage_limit_reached",
        )

    def _finish(
        self,
        episode: Episode,
        account: Account,
        row: RequestRow,
        started: float,
        provider: Provider,
        reply: Reply,
        events: list[dict[str, Any]] | None,
    ) -> Reply:
        """Bill, charge and log once the reply is out: in full when it was delivered whole,
        else for the usage the events sent had stated (see ``core.emulator.ledger``)."""
        to_vector = anthropic_vector if provider == "anthropic" else openai_vector
        stated_in = (
            anthropic_wire.stated_usage if provider == "anthropic" else openai_wire.stated_usage
        )

        def bill(wire: dict[str, Any] | None, **update: Any) -> None:
            usage = to_vector(wire) if wire is not None else None
            with self.lock:
                now = self.clock()
                after = (
                    account.quota.charge(provider, usage, now)
                    if usage is not None
                    else account.quota.snapshot(now)
                )
            self._write(
                episode,
                row,
                started,
                status=reply.status,
                quota_after=after,
                usage_wire=wire,
                usage=usage,
                billed=usage is not None,
                **update,
            )

        def delivered() -> None:
            bill(row.usage_wire, delivered=True)

        def failed(reason: str, frames_sent: int) -> None:
            stated = stated_in(events, frames_sent) if events is not None else None
            bill(stated, delivered=False, error_message=reason)

        reply.on_delivered, reply.on_failed = delivered, failed
        return reply

    def _prepare(
        self, episode: Episode, req: Incoming, provider: Provider
    ) -> tuple[RequestRow, float, Callable[[str], str], dict[str, Any] | Reply]:
        started = time.perf_counter()
        index, seq = episode.next_index(is_model_request=True)
        mint = self._ids(episode, seq)
        row = self._row(episode, req, provider, index, mint("req"))
        if self.keep_requests:
            keep_request(episode, seq, req)
        try:
            return row, started, mint, self._parse(req)
        except MalformedRequest as exc:
            error = "invalid_request_error"
            failed = self._error(
                episode, row, started, provider, error, exc.message, param=exc.param
            )
            return row, started, mint, failed

    # -- Anthropic ---------------------------------------------------------------
    def anthropic_messages(self, episode: Episode, account: Account, req: Incoming) -> Reply:
        row, started, mint, parsed = self._prepare(episode, req, "anthropic")
        if isinstance(parsed, Reply):
            return parsed
        body = parsed
        try:
            layout = anthropic_layout(body, self.count)
        except MalformedRequest as exc:
            return self._error(
                episode, row, started, "anthropic", "invalid_request_error", exc.message
            )
        conv = claude_conversation(body)
        reg = episode.registration
        turn = next_turn(
            episode.script, conv, seed=reg.seed, wrong_probability=reg.wrong_probability
        )
        stream = body.get("stream") is True
        row = row.model_copy(
            update={
                "model": body["model"],
                "stream": stream,
                "tools_offered": list(conv.offered_names),
                "system_sha256": _system_sha256(body, "anthropic"),
                "input_tokens_total": layout.total_tokens,
                "turn": TurnInfo(step=turn.step, action=turn.action, variant=turn.variant),
            }
        )
        fault = episode.fault_at(row.request_index)
        now = self.clock()
        with self.lock:
            before = account.quota.open(now)
            row = row.model_copy(update={"quota_before": before})
            if fault is not None and (
                refused := self._fault_reply(episode, row, started, "anthropic", fault)
            ):
                return refused
            if refused := self._quota_refusal(episode, row, started, "anthropic", account, now):
                return refused
            # a stream cut before message_start states nothing: the request leaves no trace
            silent = _cut_after(fault, anthropic_wire.DEFAULT_CUT_AFTER_EVENTS) == 0
            cache = account.anthropic_cache.process(layout, now, commit=not silent)
        blocks = anthropic_wire.content_blocks(turn, mint("toolu"))
        output = max(1, sum(self.count(canonical_text(b)) for b in blocks))
        wire_usage = anthropic_wire.usage_object(
            uncached=cache.uncached,
            cache_read=cache.cache_read,
            write_5m=cache.cache_write_5m,
            write_1h=cache.cache_write_1h,
            output=output,
        )
        reports_thinking = "thinking-token-count" in req.headers.get("anthropic-beta", "")
        if reports_thinking:
            wire_usage["output_tokens_details"] = {"thinking_tokens": 0}
        full = anthropic_wire.message(
            message_id=mint("msg"), model=body["model"], blocks=blocks, usage=wire_usage
        )
        row = row.model_copy(update={"usage_wire": wire_usage, "response_id": full["id"]})
        headers = {"request-id": row.request_id}
        if row.auth == "oauth":
            headers.update(anthropic_unified_headers(before))
        events = anthropic_wire.stream_events(full) if stream else None
        if events is None:
            reply = json_reply(200, full, headers)
        else:
            cut = _cut_after(fault, anthropic_wire.DEFAULT_CUT_AFTER_EVENTS)
            row = row.model_copy(update={"fault": "cut-stream"} if cut is not None else {})
            reply = _sse_reply(events, headers, cut, fault)
        return self._finish(episode, account, row, started, "anthropic", reply, events)

    def anthropic_count_tokens(self, episode: Episode, req: Incoming) -> Reply:
        started = time.perf_counter()
        _, seq = episode.next_index(is_model_request=False)
        row = self._row(episode, req, "anthropic", -1, self._ids(episode, seq)("req"))
        try:
            body = self._parse(req)
            layout = anthropic_layout({"max_tokens": 1, **body}, self.count)
        except MalformedRequest as exc:
            return self._error(
                episode, row, started, "anthropic", "invalid_request_error", exc.message
            )
        self._write(
            episode,
            row,
            started,
            status=200,
            delivered=True,
            model=body.get("model"),
            input_tokens_total=layout.total_tokens,
        )
        return json_reply(
            200, {"input_tokens": layout.total_tokens}, {"request-id": row.request_id}
        )

    # -- OpenAI ------------------------------------------------------------------
    def openai_responses(self, episode: Episode, account: Account, req: Incoming) -> Reply:
        row, started, mint, parsed = self._prepare(episode, req, "openai")
        if isinstance(parsed, Reply):
            return parsed
        body = parsed
        try:
            layout = openai_layout(body, self.count)
        except MalformedRequest as exc:
            return self._error(
                episode,
                row,
                started,
                "openai",
                "invalid_request_error",
                exc.message,
                param=exc.param,
            )
        conv = codex_conversation(body)
        reg = episode.registration
        turn = next_turn(
            episode.script, conv, seed=reg.seed, wrong_probability=reg.wrong_probability
        )
        stream = body.get("stream") is True
        key = (
            body.get("prompt_cache_key") if isinstance(body.get("prompt_cache_key"), str) else None
        )
        row = row.model_copy(
            update={
                "model": body["model"],
                "stream": stream,
                "tools_offered": list(conv.offered_names),
                "system_sha256": _system_sha256(body, "openai"),
                "input_tokens_total": layout.total_tokens,
                "prompt_cache_key": key,
                "turn": TurnInfo(step=turn.step, action=turn.action, variant=turn.variant),
            }
        )
        fault = episode.fault_at(row.request_index)
        now = self.clock()
        with self.lock:
            before = account.quota.open(now)
            row = row.model_copy(update={"quota_before": before})
            if fault is not None and (
                refused := self._fault_reply(episode, row, started, "openai", fault)
            ):
                return refused
            if refused := self._quota_refusal(episode, row, started, "openai", account, now):
                return refused
            cache = account.openai_cache.process(layout, key, now)
        items = openai_wire.output_items(turn, mint)
        reasoning = sum(self.count(canonical_text(i)) for i in items if i["type"] == "reasoning")
        output = max(1, sum(self.count(canonical_text(i)) for i in items))
        wire_usage = openai_wire.usage_object(
            total_input=cache.total, cached=cache.cache_read, output=output, reasoning=reasoning
        )
        final = openai_wire.response(
            response_id=mint("resp"),
            model=body["model"],
            created_at=int(now),
            output=items,
            usage=wire_usage,
            status="completed",
        )
        row = row.model_copy(update={"usage_wire": wire_usage, "response_id": final["id"]})
        headers = {
            "x-request-id": row.request_id,
            "openai-model": body["model"],
            **codex_headers(before),
        }
        events = openai_wire.stream_events(final) if stream else None
        if events is None:
            reply = json_reply(200, final, headers)
        else:
            cut = _cut_after(fault, openai_wire.default_cut_point(events))
            row = row.model_copy(update={"fault": "cut-stream"} if cut is not None else {})
            reply = _sse_reply(events, headers, cut, fault)
        return self._finish(episode, account, row, started, "openai", reply, events)


__all__ = ["Incoming", "ModelApi", "auth_kind"]
