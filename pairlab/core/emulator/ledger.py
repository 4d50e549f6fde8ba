"""The emulator's ground truth: one JSONL ledger per episode (``<token>.jsonl``).

Line 1 is the episode row (what was registered); every request the episode's base
URL received is one request row, written when its response has ended (or failed):
request id, model, the exact usage vector, the quota before and after, the tools
offered, the system-prompt hash, the scripted turn and any fault injected. Malformed
requests and unknown routes are rows too (``status`` >= 400, ``error_type``).

A request's usage counts (``delivered``) only when its response reached the client
whole: a 429/529 consumed nothing; a cut stream was never delivered (its usage is
kept for reference with ``delivered: false``, charged to no quota and left out of
the totals, since no client could have recorded it). :func:`ground_truth` sums the
delivered rows: the 7-dimension vector every reader must reproduce.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from pairlab.core.emulator.quota_model import AccountPlan, QuotaSnapshot
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.base import StrictModel
from pairlab.core.schemas.usage import UsageVector

FaultKind = Literal["rate-limit-429", "overloaded-529", "cut-stream"]


class Fault(StrictModel):
    """One injected fault: the ``at_request``-th model request (0-based) of the episode."""

    at_request: int = Field(ge=0)
    kind: FaultKind
    retry_after_s: int = Field(default=1, ge=0)


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
    fault: FaultKind | None = None
    error_type: str | None = None
    error_message: str | None = None
    model: str | None = None
    response_id: str | None = None
    usage_wire: dict[str, Any] | None = None  # the usage object exactly as sent
    usage: UsageVector | None = None  # the request's usage, per the provider's dimensions
    input_tokens_total: int | None = None
    quota_before: QuotaSnapshot | None = None
    quota_after: QuotaSnapshot | None = None
    tools_offered: list[str] = Field(default_factory=list)
    system_sha256: str | None = None
    request_sha256: str | None = None
    request_bytes: int = 0
    prompt_cache_key: str | None = None
    auth: Literal["api-key", "oauth", "bearer", "none"] = "none"
    turn: TurnInfo | None = None


def is_model_request(row: RequestRow) -> bool:
    return row.path.rstrip("/").endswith(("/v1/messages", "/v1/responses"))


def ground_truth(rows: Iterable[RequestRow]) -> UsageVector:
    """Sum of the usage of the delivered model responses (null stays null)."""
    total = UsageVector()
    for row in rows:
        if row.delivered and row.usage is not None and is_model_request(row):
            total = total + row.usage
    return total


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
    try:
        episode = EpisodeRow.model_validate_json(lines[0])
        requests = [RequestRow.model_validate(json.loads(line)) for line in lines[1:] if line]
    except ValueError as exc:
        raise InvalidInputError(
            f"{path}: not an emulator ledger: {exc}", reason=ReasonCode.MALFORMED_INPUT
        ) from exc
    return episode, requests


__all__ = [
    "EpisodeRegistration",
    "EpisodeRow",
    "Fault",
    "FaultKind",
    "RequestRow",
    "TurnInfo",
    "ground_truth",
    "is_model_request",
    "read_ledger",
]
