"""The model endpoints: Anthropic ``/v1/messages`` (+ ``count_tokens``) and OpenAI
``/v1/responses`` (+ ``input_tokens``), for one registered episode.

For each model request, one pipeline for both providers (their differences are in
``providers``): parse and validate (a malformed one gets the provider's 400 shape),
cut it into prompt blocks and count them, let the scripted model choose its turn
from the request, refuse it if a fault is planned for it or the account's quota is
exhausted, account its prompt caching, state its usage (``core.emulator.usage``) and
answer (SSE or JSON). The ledger row is written once the answer is out: a refusal at
once; a response when it was delivered whole or cut, billed for the usage it stated
(``core.emulator.request_ledger``), and only then charged to the quota.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pairlab.adapters.emulator.episodes import Account, Episode, LedgerWriter
from pairlab.adapters.emulator.mcp_definitions import mcp_definition_tokens
from pairlab.adapters.emulator.providers import PROVIDERS, Provider, ProviderApi, Wire
from pairlab.adapters.emulator.reply import Refusal, Reply, json_reply, sse_frame
from pairlab.core.emulator.conversation import cut_results
from pairlab.core.emulator.prompt_blocks import MalformedRequest, PromptLayout, canonical_text
from pairlab.core.emulator.quota_model import QuotaSnapshot
from pairlab.core.emulator.request_ledger import Fault, RequestRow, TurnInfo
from pairlab.core.emulator.scripted_model import ModelTurn, next_turn


@dataclass(frozen=True)
class Incoming:
    method: str
    path: str  # without the query string
    headers: Mapping[str, str]  # lower-cased names
    body: bytes
    query: str = ""  # the raw query string (the admin API reads it)


@dataclass
class _Call:
    """One model request in flight: its row (filled as it goes) and ids."""

    episode: Episode
    account: Account
    provider: Provider
    row: RequestRow
    started: float
    mint: Callable[[str], str]

    @property
    def api(self) -> ProviderApi:
        return PROVIDERS[self.provider]

    @property
    def wire(self) -> Wire:
        return self.api.wire


def auth_kind(headers: Mapping[str, str]) -> Literal["api-key", "oauth", "bearer", "none"]:
    bearer = headers.get("authorization", "")
    if bearer.lower().startswith("bearer "):
        return "oauth" if bearer[7:].strip().startswith("sk-ant-oat") else "bearer"
    return "api-key" if headers.get("x-api-key") else "none"


def _system_sha256(body: Mapping[str, Any], api: ProviderApi) -> str | None:
    system = api.system_prompt(body)
    if system is None:
        return None
    return hashlib.sha256(canonical_text(system).encode()).hexdigest()


def keep_request(episode: Episode, seq: int, req: Incoming) -> None:
    """The request as received, for audits (certification reads what the CLI sent)."""
    folder = episode.ledger_path.with_suffix(".requests")
    folder.mkdir(exist_ok=True)
    (folder / f"{seq:04d}.json").write_bytes(req.body)


def _parse(req: Incoming) -> dict[str, Any]:
    try:
        body = json.loads(req.body or b"null")
    except ValueError as exc:
        raise MalformedRequest(f"The request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise MalformedRequest("The request body must be a JSON object.")
    return body


def _cut_after(fault: Fault | None, default: int) -> int | None:
    """How many SSE events a cut stream sends (None: no cut). A dropped connection cuts
    right after the headers unless told otherwise."""
    if fault is None or fault.kind != "cut-stream":
        return None
    if fault.cut_after_events is not None:
        return fault.cut_after_events
    return 0 if fault.cut_style == "drop" else default


def _ids(episode: Episode, seq: int) -> Callable[[str], str]:
    """Stable ids for one request: the same episode token and sequence give the same ids."""
    counter = iter(range(1_000_000))

    def mint(prefix: str) -> str:
        raw = f"{episode.token}:{seq}:{prefix}:{next(counter)}"
        return f"{prefix}_{hashlib.sha256(raw.encode()).hexdigest()[:24]}"

    return mint


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

    # -- the ledger ----------------------------------------------------------------
    def _start(
        self, episode: Episode, account: Account, req: Incoming, provider: Provider, *, model: bool
    ) -> _Call:
        started = time.perf_counter()
        index, seq = episode.next_index(is_model_request=model)
        if self.keep_requests:
            keep_request(episode, seq, req)
        mint = _ids(episode, seq)
        row = RequestRow(
            token=episode.token,
            request_index=index,
            request_id=mint("req"),
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
        return _Call(episode, account, provider, row, started, mint)

    def _write(self, call: _Call, **update: Any) -> None:
        elapsed_ms = (time.perf_counter() - call.started) * 1000
        final = call.row.model_copy(update={"duration_ms": elapsed_ms, **update})
        self.writer.append(call.episode.ledger_path, final)

    def _refuse(self, call: _Call, refusal: Refusal, fault: str | None = None) -> Reply:
        self._write(
            call,
            status=refusal.status,
            error_type=refusal.error_type,
            error_message=refusal.message,
            fault=fault,
        )
        return call.wire.error_reply(refusal, call.row.request_id)

    def _bill_on_delivery(
        self, call: _Call, reply: Reply, events: list[dict[str, Any]] | None
    ) -> Reply:
        """Bill, charge and log once the reply is out: in full when it was delivered whole,
        else for the usage the events sent had stated."""

        def bill(stated: dict[str, Any] | None, **update: Any) -> None:
            usage = call.api.usage_vector(stated) if stated is not None else None
            with self.lock:
                now = self.clock()
                quota = call.account.quota
                after = quota.charge(call.provider, usage, now) if usage else quota.snapshot(now)
                if usage:
                    episode = call.episode
                    call.account.charges.append(episode.registration.episode_id or episode.token)
            self._write(
                call,
                status=reply.status,
                quota_after=after,
                usage_wire=stated,
                usage=usage,
                billed=usage is not None,
                **update,
            )

        def delivered() -> None:
            bill(call.row.usage_wire, delivered=True)

        def failed(reason: str, frames_sent: int) -> None:
            stated = call.wire.stated_usage(events, frames_sent) if events is not None else None
            bill(stated, delivered=False, error_message=reason)

        reply.on_delivered, reply.on_failed = delivered, failed
        return reply

    # -- shared steps ----------------------------------------------------------------
    def _read(
        self, call: _Call, req: Incoming, layout_of: Callable[[dict[str, Any]], PromptLayout]
    ) -> tuple[dict[str, Any], PromptLayout] | Reply:
        try:
            body = _parse(req)
            return body, layout_of(body)
        except MalformedRequest as exc:
            return self._refuse(call, call.wire.invalid(exc.message, exc.param))

    def _admit(self, call: _Call, fault: Fault | None, now: float) -> QuotaSnapshot | Reply:
        """Open the quota windows; refuse for a planned fault or an exhausted window.
        Called with the state lock held."""
        before = call.account.quota.open(now)
        call.row = call.row.model_copy(update={"quota_before": before})
        refusal = call.wire.fault_refusal(fault) if fault is not None else None
        if refusal is not None:
            return self._refuse(call, refusal, fault.kind if fault else None)
        full = call.account.quota.exhausted(now)
        if full is not None:
            wait = max(1, int((full.resets_at or now) - now))
            return self._refuse(call, call.wire.quota_refusal(full.window, wait))
        return before

    def _turn(
        self,
        call: _Call,
        body: dict[str, Any],
        layout: PromptLayout,
        turn: ModelTurn,
        offered: tuple[str, ...],
        cache_key: str | None,
        search_sources: str = "",
        cut: list[str] | None = None,
    ) -> None:
        call.row = call.row.model_copy(
            update={
                "prompt_cache_key": cache_key,
                "model": body["model"],
                "stream": body.get("stream") is True,
                "tools_offered": list(offered),
                "tool_search_sources": search_sources or None,
                "tool_results_cut": cut,
                "mcp_definition_tokens": mcp_definition_tokens(call.provider, body, self.count),
                "system_sha256": _system_sha256(body, call.api),
                "input_tokens_total": layout.total_tokens,
                "turn": TurnInfo(step=turn.step, action=turn.action, variant=turn.variant),
            }
        )

    def _answer(
        self,
        call: _Call,
        full: dict[str, Any],
        events: list[dict[str, Any]] | None,
        headers: dict[str, str],
        cut: int | None,
        fault: Fault | None,
    ) -> Reply:
        if events is None:
            return self._bill_on_delivery(call, json_reply(200, full, headers), None)
        if cut is not None:
            call.row = call.row.model_copy(update={"fault": "cut-stream"})
        reply = Reply(
            status=200,
            headers={"content-type": "text/event-stream", "cache-control": "no-cache", **headers},
            frames=[sse_frame(e) for e in events],
            cut_after=cut,
            cut_drops_connection=fault is not None and fault.cut_style == "drop",
        )
        return self._bill_on_delivery(call, reply, events)

    # -- the model request ---------------------------------------------------------
    def model_request(
        self, provider: Provider, episode: Episode, account: Account, req: Incoming
    ) -> Reply:
        """``POST /v1/messages`` (Anthropic) or ``/v1/responses`` (OpenAI): one pipeline,
        the provider's part of each step from :data:`providers.PROVIDERS`."""
        api = PROVIDERS[provider]
        call = self._start(episode, account, req, provider, model=True)
        read = self._read(call, req, lambda body: api.layout(body, self.count))
        if isinstance(read, Reply):
            return read
        body, layout = read
        conv = api.conversation(body)
        reg = episode.registration
        turn = next_turn(
            episode.script, conv, seed=reg.seed, wrong_probability=reg.wrong_probability
        )
        key = api.cache_key(body)
        self._turn(
            call, body, layout, turn, conv.offered_names, key, conv.search_hint, cut_results(conv)
        )
        fault = episode.fault_at(call.row.request_index)
        stream = body.get("stream") is True
        now = self.clock()
        with self.lock:
            before = self._admit(call, fault, now)
            if isinstance(before, Reply):
                return before
            # a stream cut before its first event states nothing: the request leaves no
            # trace (every default cut point is at least 1)
            commit = not (stream and _cut_after(fault, 1) == 0)
            cache = api.cache(account, layout, key, now, commit=commit)
        full = api.answer(turn, cache, call.mint, body, req.headers, now, self.count)
        call.row = call.row.model_copy(
            update={"usage_wire": full["usage"], "response_id": full["id"]}
        )
        headers = api.headers(call.row.request_id, call.row.auth == "oauth", body["model"], before)
        events = api.wire.stream_events(full) if stream else None
        cut = _cut_after(fault, api.default_cut(events)) if events else None
        return self._answer(call, full, events, headers, cut, fault)

    def anthropic_messages(self, episode: Episode, account: Account, req: Incoming) -> Reply:
        return self.model_request("anthropic", episode, account, req)

    def openai_responses(self, episode: Episode, account: Account, req: Incoming) -> Reply:
        return self.model_request("openai", episode, account, req)

    def refuse_unserved(
        self,
        episode: Episode,
        account: Account,
        req: Incoming,
        provider: Provider,
        refusal: Refusal,
    ) -> Reply:
        """A request to a path the episode's API does not serve: a ledger row (not a model
        request, never billed) and the provider's error answer with its request id."""
        return self._refuse(self._start(episode, account, req, provider, model=False), refusal)

    def count_input_tokens(
        self, provider: Provider, episode: Episode, account: Account, req: Incoming
    ) -> Reply:
        """Anthropic ``/v1/messages/count_tokens`` (``{"input_tokens"}``) or OpenAI
        ``/v1/responses/input_tokens`` (``{"object": "response.input_tokens",
        "input_tokens"}``): the total of the prompt blocks the same request would be cut
        into (no ``max_tokens`` / ``model`` needed). Logged, never billed."""
        call = self._start(episode, account, req, provider, model=False)
        api = PROVIDERS[provider]
        needed = {"max_tokens": 1} if provider == "anthropic" else {"model": "input-tokens"}
        read = self._read(call, req, lambda body: api.layout({**needed, **body}, self.count))
        if isinstance(read, Reply):
            return read
        body, layout = read
        self._write(
            call,
            status=200,
            delivered=True,
            model=body.get("model"),
            input_tokens_total=layout.total_tokens,
        )
        answer: dict[str, Any] = {"input_tokens": layout.total_tokens}
        if provider == "openai":
            answer = {"object": "response.input_tokens", **answer}
        header = "request-id" if provider == "anthropic" else "x-request-id"
        return json_reply(200, answer, {header: call.row.request_id})


__all__ = ["Incoming", "ModelApi", "auth_kind"]
