"""A provider's rate limit or usage limit that ended an episode: ``provider-limit``.

An episode whose CLI gave up because the provider kept answering a limit (HTTP 429) did
not measure the agent: it is recorded, **excluded** from effects with the reason
``provider-limit`` (counted in the report's exclusions), and on a resume (the same run
id) the pair it belongs to is planned again as a whole: its records are set aside (kept
under ``<run>/provider-limited/``, never deleted) and both arms run again, so each
episode id has one record in the end. pairlab never retries inside a run: the CLI's own
retries are the only ones, so a limit costs the CLI's retry budget once per episode, and
the rest of that pair is not run (it would be re-planned anyway).

The run goes on with its other pairs; it does not stop scheduling. A rate limit lifts
within minutes; a usage limit (a subscription window used up) does not, but both CLIs
answer it at once without retrying (measured: Claude Code 2.1.332 under a subscription
token, "You've hit your 5-hour limit · resets ..."; Codex 0.163.0, "You've hit your usage
limit"), so each later pair costs a second and no quota, and is re-planned on resume
like the first. A run that must not go on spending uses the budget ceiling
(:mod:`pairlab.core.budget`).

What counts, read from the CLI's own output (what a real account shows; the emulator's
ledger is the ground truth where there is one):

* Claude Code (stream-json or json): the ``result`` line (else the last
  ``is_api_error_message`` assistant line) with ``api_error_status`` 429; a usage limit
  when its ``api_error`` is ``usage_limit_reached`` or its text says "usage limit".
* Codex (``exec --json``): a ``turn.failed`` event whose message says "usage limit" (a
  usage limit) or "429" / "rate limit" (a rate limit after its retries). The ``error``
  events of a reconnect that later succeeds do not count.
* The emulator's ledger: the episode's last model request was answered 429 (the CLI
  ended on a refusal), whatever the CLI printed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from pairlab.core.emulator.request_ledger import RequestRow, is_model_request

PROVIDER_LIMIT: Final = "provider-limit"
PROVIDER_LIMITED_DIR: Final = "provider-limited"  # <run>/provider-limited/<episode>.<n>/
LIMIT_FILE: Final = "provider-limit.json"  # beside the record: kind, message, source

LimitKind = Literal["rate-limit", "usage-limit"]


@dataclass(frozen=True)
class ProviderLimit:
    """Which limit ended the episode, the words that said so, and where they were read."""

    kind: LimitKind
    message: str
    source: Literal["cli", "emulator-ledger"]

    def to_json(self) -> dict[str, str]:
        return {"reason": PROVIDER_LIMIT, "kind": self.kind, "message": self.message,
                "source": self.source}  # fmt: skip


def _kind(text: str, *, usage: bool = False) -> LimitKind:
    return "usage-limit" if usage or "usage limit" in text.lower() else "rate-limit"


def _claude_limit(events: Sequence[Mapping[str, Any]]) -> ProviderLimit | None:
    result = next((e for e in reversed(events) if e.get("type") == "result"), None)
    if result is None:  # no result line (killed): the CLI's own error message, if any
        result = next((e for e in reversed(events) if e.get("is_api_error_message")), None)
    if result is None or result.get("api_error_status") != 429:
        return None
    text = str(result.get("result") or "")
    if not text and isinstance(result.get("message"), Mapping):
        blocks = result["message"].get("content") or []
        text = " ".join(str(b.get("text", "")) for b in blocks if isinstance(b, Mapping))
    usage = result.get("api_error") == "usage_limit_reached"
    return ProviderLimit(_kind(text, usage=usage), text or "HTTP 429", "cli")


def _codex_limit(events: Sequence[Mapping[str, Any]]) -> ProviderLimit | None:
    for event in reversed(events):
        if event.get("type") != "turn.failed":
            continue
        error = event.get("error")
        message = error.get("message") if isinstance(error, Mapping) else event.get("message")
        text = str(message or "")
        lowered = text.lower()
        if "usage limit" in lowered or "429" in lowered or "rate limit" in lowered:
            return ProviderLimit(_kind(text), text, "cli")
        return None
    return None


def limit_from_cli(client: str, events: Iterable[Mapping[str, Any]]) -> ProviderLimit | None:
    """The limit the CLI's own output (its JSON lines) says ended the episode, else None."""
    seen = list(events)
    if client == "claude":
        return _claude_limit(seen)
    if client == "codex":
        return _codex_limit(seen)
    return None


def limit_from_ledger(rows: Iterable[RequestRow]) -> ProviderLimit | None:
    """The emulator's ground truth: the episode's last model request was refused 429."""
    model = [r for r in rows if is_model_request(r)]
    if not model or model[-1].status != 429:
        return None
    last = model[-1]
    text = last.error_message or "HTTP 429"
    usage = last.fault == "usage-limit-429" or last.error_type == "usage_limit_reached"
    return ProviderLimit(_kind(text, usage=usage), text, "emulator-ledger")


def provider_limit(
    client: str, events: Iterable[Mapping[str, Any]], rows: Iterable[RequestRow] | None = None
) -> ProviderLimit | None:
    """The CLI's word first (its message is what an operator reads), else the ledger's."""
    found = limit_from_cli(client, events)
    if found is None and rows is not None:
        found = limit_from_ledger(rows)
    return found


def replanned_pairs(
    excluded_reasons: Mapping[str, str | None], pair_of: Mapping[str, str]
) -> set[str]:
    """The pairs a resume plans again: every pair with an episode recorded ``provider-limit``
    (``excluded_reasons``: episode id -> its record's excluded reason; ``pair_of``: episode
    id -> pair id)."""
    return {pair_of[e] for e, reason in excluded_reasons.items() if reason == PROVIDER_LIMIT}


def provider_limit_fact(count: object) -> str:
    """The report's facts line: how many episodes a provider limit ended (none: nothing)."""
    if not isinstance(count, int) or count <= 0:
        return ""
    episodes = "1 EPISODE" if count == 1 else f"{count} EPISODES"
    return (
        f" · {episodes} ENDED BY A PROVIDER LIMIT (excluded as {PROVIDER_LIMIT}; "
        "their pairs run again on resume)"
    )


__all__ = [
    "LIMIT_FILE",
    "PROVIDER_LIMIT",
    "PROVIDER_LIMITED_DIR",
    "LimitKind",
    "ProviderLimit",
    "limit_from_cli",
    "limit_from_ledger",
    "provider_limit",
    "provider_limit_fact",
    "replanned_pairs",
]
