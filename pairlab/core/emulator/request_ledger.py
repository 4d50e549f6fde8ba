"""The emulator's per-request ground-truth ledger: one JSONL file per episode
(``<token>.jsonl``). (Not the MCP measurement ledger of ``adapters/mcp_ledger``.)

Line 1 is the episode row (what was registered); every request the episode's base
URL received is one request row, written when its response has ended (or failed):
request id, model, the exact usage vector, the quota before and after, the tools
offered, the system-prompt hash, the scripted turn and any fault injected. Malformed
requests and unknown routes are rows too (``status`` >= 400, ``error_type``; an unknown
route is not a model request: ``request_index`` -1). Ledgers written before unknown
routes were request rows hold ``{"kind": "unrouted"}`` lines instead;
:func:`read_ledger` reads them as such rows (:func:`legacy_unrouted_row`, with an empty
``request_id``: none was issued).

A request is **billed** for the usage the provider stated to the client: a response
delivered whole states its final usage; a stream cut after Anthropic's
``message_start`` stated the input usage and ``output_tokens: 1`` (the prompt was
processed and its cache writes happened, so that much is billed); a stream cut
before any usage statement (OpenAI states usage only in ``response.completed``) and
a 429/529 bill nothing. ``usage`` is the billed vector (null when nothing was
billed), ``usage_wire`` the usage object as stated, ``delivered`` whether the whole
response reached the client. The quota is charged with the billed usage.
:func:`ground_truth` sums the billed rows: the 7-dimension vector every reader must
reproduce.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field, ValidationError

from pairlab.core.emulator.quota_model import AccountPlan, QuotaSnapshot
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.base import StrictModel
from pairlab.core.schemas.usage import UsageVector
from pairlab.core.schemas.usage_recipe import EpisodeRecipe

_Row = TypeVar("_Row")
FaultKind = Literal[
    "rate-limit-429", "overloaded-529", "cut-stream", "rate-limit-held", "usage-limit-429"
]
FAULT_KINDS: tuple[str, ...] = (
    "rate-limit-429",
    "overloaded-529",
    "cut-stream",
    "rate-limit-held",
    "usage-limit-429",
)
# kinds that hold from their request on: every later model request of the episode is
# refused the same way (a limit that does not lift while the CLI retries)
HELD_FAULT_KINDS: frozenset[str] = frozenset({"rate-limit-held", "usage-limit-429"})


class Fault(StrictModel):
    """One injected fault: the ``at_request``-th model request (0-based) of the episode.

    ``cut-stream`` cuts a streaming response after ``cut_after_events`` SSE events.
    ``cut_style`` ``end`` ends the HTTP body there (the SSE stream stops early; default
    point: Anthropic after ``message_start``, where Claude Code 2.1.332 retries the
    turn without streaming; OpenAI after the first delta). ``drop`` resets the
    connection (a network failure; default point: right after the response headers,
    before any event -- what a client reads of bytes sent just before a reset is not
    knowable, so by default none are). Both CLIs then reconnect and stream again.

    ``rate-limit-429`` refuses that one request (the CLI's retry succeeds). The *held*
    kinds refuse it and every later model request of the episode, as a provider does
    while a limit lasts: ``rate-limit-held`` with the same rate-limit answer,
    ``usage-limit-429`` with the provider's usage-limit answer (Anthropic: 429
    ``rate_limit_error`` with the unified rate-limit headers saying ``rejected``; OpenAI:
    429 ``usage_limit_reached``). The CLI's own retries then fail too and the episode
    ends in bounded time with the CLI's limit message (``provider-limit``)."""

    at_request: int = Field(ge=0)
    kind: FaultKind
    retry_after_s: int = Field(default=1, ge=0)
    cut_after_events: int | None = Field(default=None, ge=0)
    cut_style: Literal["end", "drop"] = "end"


class EpisodeRegistration(StrictModel):
    """What the emulator must know about an episode before it starts."""

    task_id: str
    arm: str = "baseline"
    seed: int = 0
    account: str = "default"
    faults: list[Fault] = Field(default_factory=list)
    wrong_probability: float = Field(default=0.1, ge=0.0, le=1.0)
    episode_id: str | None = None  # the platform's episode id, for joining
    plan: AccountPlan | None = None  # the account's limits when this registration creates it
    # the intervention's usage recipe for this task (treated arms only; never the baseline)
    recipe: EpisodeRecipe | None = None


class EpisodeRow(StrictModel):
    schema_version: Literal[1] = 1
    kind: Literal["episode"] = "episode"
    token: str
    registered_at: float
    registration: EpisodeRegistration
    tokenizer: str  # which local encoding counted the tokens (an estimate)


class TurnInfo(StrictModel):
    step: int
    action: str  # the tool called, or "final-answer"
    variant: Literal["correct", "wrong"]


class RequestRow(StrictModel):
    schema_version: Literal[1] = 1
    kind: Literal["request"] = "request"
    token: str
    request_index: int  # model requests of this episode, 0-based (faults count them)
    request_id: str
    at: float
    duration_ms: float
    provider: Literal["anthropic", "openai"]
    method: str
    path: str
    status: int
    stream: bool | None = None
    delivered: bool = False
    billed: bool = False
    fault: FaultKind | None = None
    error_type: str | None = None
    error_message: str | None = None
    model: str | None = None
    response_id: str | None = None
    usage_wire: dict[str, Any] | None = None  # the (last) usage object stated to the client
    usage: UsageVector | None = None  # the billed usage, per the provider's dimensions
    input_tokens_total: int | None = None
    quota_before: QuotaSnapshot | None = None
    quota_after: QuotaSnapshot | None = None
    tools_offered: list[str] = Field(default_factory=list)
    # the description of Codex's tool_search: it names the MCP servers whose tools are
    # deferred behind it (they are not in tools_offered until a search loads them); None
    # when the request offers no such tool
    tool_search_sources: str | None = None
    # the calls of the request's history whose result the CLI sent back cut (refused,
    # persisted or truncated: conversation.is_cut_result), qualified names in order; each
    # request resends the history, so the last request holds the episode's; None on
    # ledgers written before (issue 26 item 6) and on requests that are not model requests
    tool_results_cut: list[str] | None = None
    # per MCP server the request named, the tokens of what it carried of it (definitions
    # as carried, plus lines naming deferred tools; adapters/emulator/mcp_definitions);
    # None on rows without a model turn and on ledgers written before
    mcp_definition_tokens: dict[str, int] | None = None
    system_sha256: str | None = None
    request_sha256: str | None = None
    request_bytes: int = 0
    prompt_cache_key: str | None = None
    auth: Literal["api-key", "oauth", "bearer", "none"] = "none"
    turn: TurnInfo | None = None


def is_model_request(row: RequestRow) -> bool:
    return row.path.rstrip("/").endswith(("/v1/messages", "/v1/responses"))


def ground_truth(rows: Iterable[RequestRow]) -> UsageVector:
    """Sum of the billed usage of the model requests (null stays null)."""
    total = UsageVector()
    for row in rows:
        if row.billed and row.usage is not None and is_model_request(row):
            total = total + row.usage
    return total


class UnroutedRow(StrictModel):
    """An unknown route as older emulators logged it (now a :class:`RequestRow`)."""

    kind: Literal["unrouted"]
    at: float
    method: str
    path: str
    status: int
    message: str


def legacy_unrouted_row(token: str, line: dict[str, Any]) -> RequestRow:
    """A legacy ``kind: unrouted`` line as the request row it stands for. Its provider is
    the one whose error shape the old emulator answered with (OpenAI for ``/responses``
    and ``backend-api`` paths, else Anthropic)."""
    old = UnroutedRow.model_validate(line)
    openai = "/responses" in old.path or "backend-api" in old.path
    return RequestRow(
        token=token,
        request_index=-1,
        request_id="",
        at=old.at,
        duration_ms=0.0,
        provider="openai" if openai else "anthropic",
        method=old.method,
        path=old.path,
        status=old.status,
        error_type="invalid_request_error" if openai else "not_found_error",
        error_message=old.message,
    )


class FaultsRow(StrictModel):
    """The episode's planned faults replaced while it is registered (the stand-in's admin
    ``PUT /admin/episodes/<t>/faults``): from model request ``from_request`` on, ``faults``
    are the ones that apply (an empty list lifts a held limit). The instrument's ground
    truth: which limit a test made the provider answer, and when it lifted."""

    schema_version: Literal[1] = 1
    kind: Literal["faults"] = "faults"
    token: str
    at: float
    from_request: int  # the episode's model requests so far: the next one is the first
    faults: list[Fault]


def _request_row(token: str, line: str) -> RequestRow | None:
    """One request row (a legacy unrouted line as one); None for a :class:`FaultsRow`."""
    data = json.loads(line)
    if isinstance(data, dict) and data.get("kind") == "unrouted":
        return legacy_unrouted_row(token, data)
    if isinstance(data, dict) and data.get("kind") == "faults":
        FaultsRow.model_validate(data)
        return None
    return RequestRow.model_validate(data)


def _parsed(path: Path, number: int, parse: Callable[[], _Row]) -> _Row:
    """One line parsed, or an error naming the line and its first fault."""
    try:
        return parse()
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the row"
        raise InvalidInputError(
            f"{path}:{number}: not an emulator ledger row: {where}: {first['msg']}",
            reason=ReasonCode.MALFORMED_INPUT,
        ) from exc
    except ValueError as exc:
        raise InvalidInputError(
            f"{path}:{number}: not an emulator ledger row: {exc}", reason=ReasonCode.MALFORMED_INPUT
        ) from exc


def read_ledger(path: Path) -> tuple[EpisodeRow, list[RequestRow]]:
    """Parse one episode ledger; a malformed line is an error (the ledger is ours)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InvalidInputError(
            f"{path}: cannot read the emulator ledger: {exc}", reason=ReasonCode.INPUT_READ_FAILED
        ) from exc
    if not lines:
        raise InvalidInputError(f"{path}: empty emulator ledger", reason=ReasonCode.MALFORMED_INPUT)
    episode = _parsed(path, 1, lambda: EpisodeRow.model_validate_json(lines[0]))
    parsed = [
        _parsed(path, number, partial(_request_row, episode.token, line))
        for number, line in enumerate(lines[1:], start=2)
        if line
    ]
    return episode, [row for row in parsed if row is not None]


__all__ = [
    "FAULT_KINDS",
    "HELD_FAULT_KINDS",
    "EpisodeRegistration",
    "EpisodeRow",
    "Fault",
    "FaultKind",
    "FaultsRow",
    "RequestRow",
    "TurnInfo",
    "UnroutedRow",
    "ground_truth",
    "is_model_request",
    "legacy_unrouted_row",
    "read_ledger",
]
