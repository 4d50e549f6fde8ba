"""Registered episodes, per-account state (quota, prompt caches) and the ledger files.

An episode is addressed by a token in its base URL path (``/e/<token>/...``); its
ledger is ``<ledger_dir>/<token>.jsonl`` (see ``core.emulator.request_ledger``).
Accounts are shared by the episodes naming them: quota and prompt caches are per
account, as at the providers (a cached system prompt serves the account's next
session too).
Requests that name no known episode are logged to ``<ledger_dir>/unrouted.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from pairlab.core.emulator.prompt_cache import AnthropicPromptCache, OpenAIPromptCache
from pairlab.core.emulator.quota_model import AccountPlan, AccountQuota
from pairlab.core.emulator.request_ledger import (
    HELD_FAULT_KINDS,
    EpisodeRegistration,
    EpisodeRow,
    Fault,
    FaultsRow,
    RequestRow,
    ground_truth,
    read_ledger,
)
from pairlab.core.emulator.scripted_model import TaskScript
from pairlab.core.errors import InvalidInputError, ReasonCode

UNROUTED_LEDGER = "unrouted.jsonl"
_TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


@dataclass
class Account:
    name: str
    quota: AccountQuota
    anthropic_cache: AnthropicPromptCache = field(default_factory=AnthropicPromptCache)
    openai_cache: OpenAIPromptCache = field(default_factory=OpenAIPromptCache)
    # every charge to the quota, in order: the episode that made it (its platform episode id,
    # else its token) -- the ground truth for "did anything else use the account meanwhile"
    charges: list[str] = field(default_factory=list)


@dataclass
class Episode:
    token: str
    registration: EpisodeRegistration
    script: TaskScript
    ledger_path: Path
    model_requests: int = 0
    all_requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _inflight: int = 0
    _idle: threading.Condition = field(default_factory=threading.Condition)

    def begin(self) -> None:
        with self._idle:
            self._inflight += 1

    def end(self) -> None:
        with self._idle:
            self._inflight -= 1
            self._idle.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until every request this episode received has its ledger row written."""
        with self._idle:
            return self._idle.wait_for(lambda: self._inflight == 0, timeout=timeout_s)

    def next_index(self, *, is_model_request: bool) -> tuple[int, int]:
        """(model request index, request sequence number) for a new request."""
        with self.lock:
            seq = self.all_requests
            self.all_requests += 1
            if not is_model_request:
                return -1, seq
            index = self.model_requests
            self.model_requests += 1
            return index, seq

    def fault_at(self, index: int) -> Fault | None:
        """The fault planned for this model request: one at this index, else a held one
        (``HELD_FAULT_KINDS``) that began at an earlier request."""
        faults = self.registration.faults
        exact = next((f for f in faults if f.at_request == index), None)
        if exact is not None:
            return exact
        return next(
            (f for f in faults if f.kind in HELD_FAULT_KINDS and f.at_request < index), None
        )


class LedgerWriter:
    """Appends rows to JSONL files; one lock per process keeps lines whole."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def append(
        self, path: Path, row: EpisodeRow | RequestRow | FaultsRow | dict[str, object]
    ) -> None:
        text = (
            json.dumps(row, default=str)
            if isinstance(row, dict)
            else row.model_dump_json(exclude_none=False)
        )
        with self._lock, path.open("a", encoding="utf-8") as handle:
            handle.write(text + "\n")
            handle.flush()


def derive_token(registration: EpisodeRegistration, taken: set[str]) -> str:
    """A deterministic token from the registration (suffixed when the same one repeats)."""
    digest = hashlib.sha256(registration.model_dump_json().encode()).hexdigest()[:16]
    token, n = f"ep-{digest}", 1
    while token in taken:
        n += 1
        token = f"ep-{digest}-{n}"
    return token


def check_token(token: str) -> str:
    if not _TOKEN.match(token):
        raise InvalidInputError(
            f"episode token '{token}' must be 1-128 of [A-Za-z0-9._-]",
            reason=ReasonCode.INVALID_INPUT,
        )
    return token


def new_account(name: str, plan: AccountPlan | None) -> Account:
    return Account(name=name, quota=AccountQuota(plan or AccountPlan()))


def episode_summary(episode: Episode) -> dict[str, object]:
    """Registration, counts and the ground-truth vector read back from the ledger."""
    summary: dict[str, object] = {
        "token": episode.token,
        "ledger": str(episode.ledger_path),
        "registration": episode.registration.model_dump(mode="json"),
        "model_requests": episode.model_requests,
    }
    if episode.ledger_path.is_file():
        _, rows = read_ledger(episode.ledger_path)
        summary["ground_truth"] = ground_truth(rows).model_dump(mode="json")
        summary["delivered"] = sum(1 for r in rows if r.delivered)
        summary["faults"] = [r.fault for r in rows if r.fault]
    return summary


__all__ = [
    "UNROUTED_LEDGER",
    "Account",
    "Episode",
    "LedgerWriter",
    "check_token",
    "derive_token",
    "episode_summary",
    "new_account",
]
