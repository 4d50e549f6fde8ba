"""The emulator without HTTP: episodes, accounts, routing of one request to a :class:`Reply`.

Routes (every episode route is under ``/e/<token>``, so a CLI's base URL names its
episode: ``ANTHROPIC_BASE_URL=http://H:P/e/<token>``, Codex
``base_url = "http://H:P/e/<token>/v1"``):

| method | path | what |
| --- | --- | --- |
| POST | ``/e/<t>/v1/messages`` | Anthropic Messages (SSE or JSON) |
| POST | ``/e/<t>/v1/messages/count_tokens`` | Anthropic token count |
| POST | ``/e/<t>/v1/responses`` | OpenAI Responses (SSE or JSON) |
| POST | ``/e/<t>/v1/responses/input_tokens`` | OpenAI input token count |
| POST | ``/e/<t>/backend-api/codex/responses`` | the same, as the ChatGPT backend a ChatGPT login's Codex calls |
| GET | ``/e/<t>/api/oauth/usage``, ``/a/<account>/api/oauth/usage`` | Claude OAuth usage (quota) |
| GET | ``/e/<t>/backend-api/wham/usage``, ``/a/<account>/backend-api/wham/usage`` | Codex usage (quota) |
| POST | ``/admin/episodes`` | register an episode (JSON :class:`EpisodeRegistration`, optional ``token``) |
| GET | ``/admin/episodes/<t>`` | an episode's summary and ground truth |
| PUT | ``/admin/episodes/<t>/faults`` | replace its planned faults (JSON ``{"faults": [Fault]}``; ``[]`` lifts a held limit), a ``faults`` ledger row |
| GET | ``/admin/accounts/<a>/charges?after=N`` | the account's charge counter; episodes charged after N |
| GET | ``/healthz`` | liveness |

With an :class:`~pairlab.adapters.emulator.auth_gate.AuthGate` (``serve --require-auth``),
every route but the admin API, ``/healthz`` and ``HEAD`` first checks the credential and
answers the provider's 401 when it is missing, wrong or expired (the stand-in provider).

Anything else gets the 404 of the provider the client meant, in that provider's shape
and with its request-id header (``unserved``), and a ledger row: a request row of the
episode's ledger (status 404, not a model request, never billed) under ``/e/<t>``, else
a line of ``unrouted.jsonl``. Every provider-shaped answer carries a request id
(Anthropic ``request-id``, OpenAI ``x-request-id``), errors too.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from pydantic import ValidationError

from pairlab.adapters.emulator.auth_gate import AuthGate
from pairlab.adapters.emulator.catalog_scripts import task_script
from pairlab.adapters.emulator.episodes import (
    UNROUTED_LEDGER,
    Account,
    Episode,
    LedgerWriter,
    check_token,
    derive_token,
    episode_summary,
    new_account,
)
from pairlab.adapters.emulator.model_api import Incoming, ModelApi
from pairlab.adapters.emulator.providers import PROVIDERS
from pairlab.adapters.emulator.reply import Reply, json_reply
from pairlab.adapters.emulator.unserved import not_found, provider_of
from pairlab.core.accounting.tokenizer import load_token_counter
from pairlab.core.emulator.quota_model import AccountPlan
from pairlab.core.emulator.quota_surfaces import claude_oauth_usage, codex_usage
from pairlab.core.emulator.request_ledger import (
    EpisodeRegistration,
    EpisodeRow,
    Fault,
    FaultsRow,
)
from pairlab.core.errors import InvalidInputError, ReasonCode

_COUNT_MEMO_MAX = 65_536
IDLE_WAIT_S = 10.0
_CHARGES_ROUTE = ["admin", "accounts", "charges"]  # /admin/accounts/<name>/charges
# a ChatGPT login's Codex: <provider URL>/responses, its provider URL .../backend-api/codex
_CHATGPT_RESPONSES = ["backend-api", "codex", "responses"]


def _memo_counter(count: Callable[[str], int]) -> Callable[[str], int]:
    """Token counts memoised by text: both CLIs resend the whole history every turn."""
    memo: dict[bytes, int] = {}
    lock = threading.Lock()

    def counted(text: str) -> int:
        if len(text) < 64:
            return count(text)
        key = hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).digest()
        with lock:
            hit = memo.get(key)
        if hit is not None:
            return hit
        value = count(text)
        with lock:
            if len(memo) >= _COUNT_MEMO_MAX:
                memo.clear()
            memo[key] = value
        return value

    return counted


def _ending(reply: Reply, episode: Episode) -> Reply:
    """The reply, marking the episode idle once its ledger row is written (after sending)."""
    delivered, failed = reply.on_delivered, reply.on_failed

    def on_delivered() -> None:
        try:
            delivered()
        finally:
            episode.end()

    def on_failed(reason: str, frames_sent: int) -> None:
        try:
            failed(reason, frames_sent)
        finally:
            episode.end()

    reply.on_delivered, reply.on_failed = on_delivered, on_failed
    return reply


class EmulatorService:
    def __init__(
        self,
        ledger_dir: Path,
        *,
        catalog_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
        accounts: dict[str, AccountPlan] | None = None,
        keep_requests: bool = False,
        auth: AuthGate | None = None,
    ) -> None:
        self.ledger_dir = ledger_dir
        self.auth = auth
        self.ledger_dir.mkdir(parents=True, exist_ok=True)
        self.catalog_dir = catalog_dir
        self.clock = clock
        counter = load_token_counter()
        self.tokenizer = counter.description
        self._lock = threading.Lock()
        self._episodes: dict[str, Episode] = {}
        self._accounts: dict[str, Account] = {
            name: new_account(name, plan) for name, plan in (accounts or {}).items()
        }
        self._writer = LedgerWriter()
        self._answered = 0  # answers outside any episode's ledger (their request ids)
        self.api = ModelApi(
            count=_memo_counter(counter.count),
            clock=clock,
            writer=self._writer,
            state_lock=self._lock,
            keep_requests=keep_requests,
        )

    # -- registry ----------------------------------------------------------------
    def register(self, registration: EpisodeRegistration, token: str | None = None) -> Episode:
        """Register an episode before its CLI starts; returns it (token, ledger path)."""
        script = task_script(registration.task_id, self.catalog_dir)
        if registration.recipe is not None:  # the treated arm follows the recipe
            script = replace(script, recipe=registration.recipe)
        with self._lock:
            if token is None:
                token = derive_token(registration, set(self._episodes))
            elif check_token(token) in self._episodes:
                raise InvalidInputError(
                    f"episode token '{token}' is already registered",
                    reason=ReasonCode.INVALID_INPUT,
                )
            if registration.account not in self._accounts:
                self._accounts[registration.account] = new_account(
                    registration.account, registration.plan
                )
            episode = Episode(
                token=token,
                registration=registration,
                script=script,
                ledger_path=self.ledger_dir / f"{token}.jsonl",
            )
            self._episodes[token] = episode
        self._writer.append(
            episode.ledger_path,
            EpisodeRow(
                token=token,
                registered_at=self.clock(),
                registration=registration,
                tokenizer=self.tokenizer,
            ),
        )
        return episode

    def episode(self, token: str) -> Episode | None:
        with self._lock:
            return self._episodes.get(token)

    def account(self, name: str) -> Account:
        with self._lock:
            if name not in self._accounts:
                self._accounts[name] = new_account(name, None)
            return self._accounts[name]

    def open_account(self, account: str) -> None:
        """Start the account's quota windows now, as on an account already in use (a fresh
        account's windows start at its first request, and until then state no reset)."""
        with self._lock:
            self._accounts.setdefault(account, new_account(account, None)).quota.open(self.clock())

    def charge_mark(self, account: str) -> int:
        """How many charges the account has had so far (a mark to bracket an interval)."""
        with self._lock:
            found = self._accounts.get(account)
            return len(found.charges) if found else 0

    def charged_between(self, account: str, start: int, end: int) -> list[str]:
        """The episode tokens of the account's charges numbered ``start < n <= end``."""
        with self._lock:
            found = self._accounts.get(account)
            return list(found.charges[start:end]) if found else []

    # -- routing -----------------------------------------------------------------
    def handle(self, req: Incoming) -> Reply:
        parts = [p for p in req.path.split("/") if p]
        if req.method == "GET" and parts == ["healthz"]:
            return json_reply(200, {"ok": True, "episodes": len(self._episodes)})
        if parts[:2] == ["admin", "episodes"]:
            return self._admin(req, parts[2:])
        if req.method == "GET" and len(parts) == 4 and parts[:2] + parts[3:] == _CHARGES_ROUTE:
            return self._charges(parts[2], req)
        if self.auth is not None and req.method != "HEAD":
            refused = self._unauthenticated(req)
            if refused is not None:
                return refused
        if len(parts) >= 2 and parts[0] == "a":
            return self._usage(req, self.account(parts[1]), parts[2:]) or self._not_found(req, None)
        if len(parts) >= 2 and parts[0] == "e":
            episode = self.episode(parts[1])
            if episode is None:
                return self._not_found(req, None, f"unknown episode token '{parts[1]}'")
            episode.begin()
            try:
                reply = self._episode_route(req, episode, parts[2:])
            except BaseException:
                episode.end()
                raise
            return _ending(reply, episode)
        if req.method == "HEAD":
            return self._head(req)
        return self._not_found(req, None)

    def _episode_route(self, req: Incoming, episode: Episode, rest: list[str]) -> Reply:
        account = self.account(episode.registration.account)
        if req.method == "POST" and rest == ["v1", "messages"]:
            return self.api.anthropic_messages(episode, account, req)
        if req.method == "POST" and rest == ["v1", "messages", "count_tokens"]:
            return self.api.count_input_tokens("anthropic", episode, account, req)
        if req.method == "POST" and rest == ["v1", "responses", "input_tokens"]:
            return self.api.count_input_tokens("openai", episode, account, req)
        if req.method == "POST" and rest in (["v1", "responses"], _CHATGPT_RESPONSES):
            return self.api.openai_responses(episode, account, req)
        usage = self._usage(req, account, rest)
        if usage is not None:
            return usage
        if req.method == "HEAD":
            return self._head(req)
        return self._not_found(req, episode)

    def _usage(self, req: Incoming, account: Account, rest: list[str]) -> Reply | None:
        if req.method != "GET":
            return None
        with self._lock:
            snapshot = account.quota.snapshot(self.clock())
        if rest == ["api", "oauth", "usage"]:
            return json_reply(200, claude_oauth_usage(snapshot), {"request-id": self._request_id()})
        if rest == ["backend-api", "wham", "usage"]:
            return json_reply(200, codex_usage(snapshot), {"x-request-id": self._request_id()})
        return None

    def _not_found(
        self, req: Incoming, episode: Episode | None, detail: str | None = None
    ) -> Reply:
        """The provider's 404 (``unserved``), with a request id, and its ledger row: a
        request row of the episode's ledger, else a line of ``unrouted.jsonl``."""
        provider = provider_of(req.path, req.headers)
        refusal = not_found(provider, req.method, req.path, detail)
        if episode is not None:
            account = self.account(episode.registration.account)
            return self.api.refuse_unserved(episode, account, req, provider, refusal)
        request_id = self._request_id()
        row: dict[str, Any] = {
            "kind": "unrouted",
            "at": self.clock(),
            "request_id": request_id,
            "provider": provider,
            "method": req.method,
            "path": req.path,
            "status": refusal.status,
            "message": refusal.message,
        }
        self._writer.append(self.ledger_dir / UNROUTED_LEDGER, row)
        return PROVIDERS[provider].wire.error_reply(refusal, request_id)

    def _unauthenticated(self, req: Incoming) -> Reply | None:
        """The provider's 401 when the gate refuses the request's credential (``auth_gate``),
        with a request id and a row of ``unrouted.jsonl`` that names no credential."""
        assert self.auth is not None
        provider = provider_of(req.path, req.headers)
        refusal = self.auth.refusal(provider, req.headers)
        if refusal is None:
            return None
        request_id = self._request_id()
        row: dict[str, Any] = {
            "kind": "unauthenticated",
            "at": self.clock(),
            "request_id": request_id,
            "provider": provider,
            "method": req.method,
            "path": req.path,
            "status": refusal.status,
            "message": refusal.message if refusal.code != "invalid_api_key" else "invalid_api_key",
        }
        self._writer.append(self.ledger_dir / UNROUTED_LEDGER, row)
        return PROVIDERS[provider].wire.error_reply(refusal, request_id)

    def _head(self, req: Incoming) -> Reply:
        """A connectivity check (``HEAD`` of a base URL): 200, with a request id."""
        header = "x-request-id" if provider_of(req.path, req.headers) == "openai" else "request-id"
        return Reply(status=200, headers={header: self._request_id()}, body=b"")

    def _request_id(self) -> str:
        """A request id for an answer outside any episode's ledger (stable per process)."""
        with self._lock:
            self._answered += 1
            n = self._answered
        return "req_" + hashlib.sha256(f"pairlab-emulator:{n}".encode()).hexdigest()[:24]

    def _charges(self, account: str, req: Incoming) -> Reply:
        """``GET /admin/accounts/<a>/charges?after=N``: the account's charge counter and the
        episodes of its charges numbered after N (the run's concurrent-use ground truth)."""
        query = parse_qs(req.query)
        try:
            after = int(query.get("after", ["0"])[0])
        except ValueError:
            return json_reply(400, {"error": "after must be an integer"})
        mark = self.charge_mark(account)
        charged = self.charged_between(account, max(after, 0), mark)
        charges = [{"seq": after + i + 1, "episode_id": e} for i, e in enumerate(charged)]
        return json_reply(200, {"account": account, "mark": mark, "charges": charges})

    def _admin(self, req: Incoming, rest: list[str]) -> Reply:
        if req.method == "POST" and not rest:
            try:
                payload = json.loads(req.body or b"{}")
                token = payload.pop("token", None) if isinstance(payload, dict) else None
                registration = EpisodeRegistration.model_validate(payload)
                episode = self.register(registration, token)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "the registration"
                text = f"invalid registration: {where}: {first['msg']}"
                return json_reply(400, {"error": text, "reason_code": "invalid-input"})
            except ValueError as exc:
                text = f"the registration is not JSON: {exc}"
                return json_reply(400, {"error": text, "reason_code": "invalid-input"})
            except InvalidInputError as exc:
                return json_reply(400, exc.to_json())
            return json_reply(201, {"token": episode.token, "ledger": str(episode.ledger_path)})
        if req.method == "PUT" and len(rest) == 2 and rest[1] == "faults":
            return self._replace_faults(req, rest[0])
        if req.method == "GET" and len(rest) == 1:
            found = self.episode(rest[0])
            if found is None:
                return json_reply(404, {"error": f"unknown episode token '{rest[0]}'"})
            found.wait_idle(IDLE_WAIT_S)
            try:
                return json_reply(200, episode_summary(found))
            except InvalidInputError as exc:  # its ledger was damaged outside the emulator
                return json_reply(500, exc.to_json())
        return json_reply(404, {"error": f"{req.method} {req.path}: no such admin route"})

    def _replace_faults(self, req: Incoming, token: str) -> Reply:
        """``PUT /admin/episodes/<t>/faults``: the faults planned for the episode's next
        model requests (``at_request`` counts them all, as at registration; a held kind from
        the count so far holds the provider's limit from the next request; ``[]`` lifts it).
        A test's instrument for a provider limit that starts and lifts between a run's
        attempts; its ground truth is the ``faults`` ledger row written here and the
        request rows' ``fault``."""
        found = self.episode(token)
        if found is None:
            return json_reply(404, {"error": f"unknown episode token '{token}'"})
        try:
            payload = json.loads(req.body or b"{}")
            faults = [Fault.model_validate(f) for f in payload["faults"]]
        except (ValueError, KeyError, TypeError) as exc:
            text = f'the body must be {{"faults": [...]}} of faults: {exc}'
            return json_reply(400, {"error": text, "reason_code": "invalid-input"})
        with found.lock:
            found.registration = found.registration.model_copy(update={"faults": faults})
            row = FaultsRow(
                token=token, at=self.clock(), from_request=found.model_requests, faults=faults
            )
        self._writer.append(found.ledger_path, row)
        return json_reply(200, row.model_dump(mode="json"))


__all__ = ["EmulatorService"]
