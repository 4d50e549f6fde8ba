"""The provider-limit rule (core/provider_limit.py): the lines are those Claude Code 2.1.332
and Codex 0.163.0 printed against the emulator's held faults (usage-limit-429,
rate-limit-held), trimmed to the fields the rule reads."""

from __future__ import annotations

from typing import Any

import pytest

from pairlab.core.emulator.request_ledger import RequestRow
from pairlab.core.emulator.run_settings import parse_fault_rule
from pairlab.core.errors import InvalidInputError
from pairlab.core.provider_limit import (
    PROVIDER_LIMIT,
    limit_from_cli,
    limit_from_ledger,
    provider_limit,
    provider_limit_fact,
    replanned_pairs,
)

CLAUDE_SUBSCRIPTION_LIMIT = [
    {"type": "rate_limit_event", "rate_limit_info": {"status": "rejected"}},
    {
        "type": "assistant",
        "is_api_error_message": True,
        "api_error_status": 429,
        "api_error": "usage_limit_reached",
        "message": {"content": [{"type": "text", "text": "You've hit your 5-hour limit"}]},
    },
    {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "api_error_status": 429,
        "api_error_type": "rate_limit_error",
        "api_error": "usage_limit_reached",
        "result": "You've hit your 5-hour limit · resets 12:48am (UTC)",
        "terminal_reason": "api_error",
    },
]
CLAUDE_KEY_RATE_LIMIT = [
    {"type": "system", "subtype": "api_retry", "attempt": 10, "error_status": 429},
    {
        "type": "result",
        "is_error": True,
        "api_error_status": 429,
        "api_error_type": "rate_limit_error",
        "result": "API Error: Request rejected (429) · This request would exceed your rate limit",
    },
]
CLAUDE_401 = [{"type": "result", "is_error": True, "api_error_status": 401, "result": "Invalid"}]
CLAUDE_RETRIED_AND_DONE = [
    {"type": "system", "subtype": "api_retry", "attempt": 1, "error_status": 429},
    {"type": "result", "is_error": False, "result": "Fixed the median."},
]
CODEX_USAGE_LIMIT = [
    {"type": "error", "message": "You’ve hit your usage limit. Try again later."},
    {"type": "turn.failed", "error": {"message": "You’ve hit your usage limit. Try again later."}},
]
CODEX_RATE_LIMIT = [
    {"type": "error", "message": "Reconnecting... 5/5 (exceeded retry limit, last status: 429)"},
    {
        "type": "turn.failed",
        "error": {"message": "exceeded retry limit, last status: 429 Too Many Requests"},
    },
]
CODEX_RECONNECTED = [  # a 429 retried with success: the reconnect's error line is not a limit
    {"type": "error", "message": "Reconnecting... 1/5 (last status: 429 Too Many Requests)"},
    {"type": "turn.completed", "usage": {"input_tokens": 10}},
]
CODEX_401 = [{"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized"}}]


@pytest.mark.parametrize(
    ("client", "events", "kind", "words"),
    [
        ("claude", CLAUDE_SUBSCRIPTION_LIMIT, "usage-limit", "You've hit your 5-hour limit"),
        ("claude", CLAUDE_KEY_RATE_LIMIT, "rate-limit", "Request rejected (429)"),
        ("codex", CODEX_USAGE_LIMIT, "usage-limit", "hit your usage limit"),
        ("codex", CODEX_RATE_LIMIT, "rate-limit", "429 Too Many Requests"),
    ],
)
def test_the_cli_that_gave_up_on_a_limit_says_which(
    client: str, events: list[dict[str, Any]], kind: str, words: str
) -> None:
    limit = limit_from_cli(client, events)
    assert limit is not None and limit.kind == kind and words in limit.message
    assert limit.source == "cli" and limit.to_json()["reason"] == PROVIDER_LIMIT


@pytest.mark.parametrize(
    ("client", "events"),
    [
        ("claude", CLAUDE_401),
        ("claude", CLAUDE_RETRIED_AND_DONE),
        ("claude", []),
        ("codex", CODEX_RECONNECTED),
        ("codex", CODEX_401),
        ("sim", CODEX_USAGE_LIMIT),  # a client the rule does not read
    ],
)
def test_a_recovered_429_or_another_error_is_no_limit(
    client: str, events: list[dict[str, Any]]
) -> None:
    assert limit_from_cli(client, events) is None


def _row(index: int, status: int, **extra: Any) -> RequestRow:
    return RequestRow(
        token="t",
        request_index=index,
        request_id=f"r{index}",
        at=0.0,
        duration_ms=1.0,
        provider="anthropic",
        method="POST",
        path="/ep/v1/messages",
        status=status,
        **extra,
    )


def test_the_ledger_is_ground_truth_when_the_cli_said_nothing_readable() -> None:
    held = [_row(0, 200), *(_row(i, 429, fault="usage-limit-429") for i in (1, 2))]
    limit = provider_limit("claude", [{"type": "result", "is_error": True}], held)
    assert limit is not None and (limit.kind, limit.source) == ("usage-limit", "emulator-ledger")
    # a 429 the CLI retried past (the last request answered) is no limit
    recovered = [_row(0, 200), _row(1, 429, fault="rate-limit-429"), _row(2, 200)]
    assert limit_from_ledger(recovered) is None
    assert limit_from_ledger([]) is None
    # the CLI's word wins over the ledger's (its message is what the operator reads)
    from_cli = provider_limit("codex", CODEX_RATE_LIMIT, held)
    assert from_cli is not None and from_cli.source == "cli" and from_cli.kind == "rate-limit"


def test_a_resume_plans_again_every_pair_with_a_provider_limit_episode() -> None:
    reasons = {"r:t:0:baseline": None, "r:t:0:optimizer": PROVIDER_LIMIT,
               "r:t:1:baseline": "grader-infrastructure-error"}  # fmt: skip
    pairs = {e: e.rsplit(":", 1)[0] for e in reasons}
    assert replanned_pairs(reasons, pairs) == {"r:t:0"}
    assert replanned_pairs({}, {}) == set()


def test_the_report_counts_them_and_says_nothing_when_there_are_none() -> None:
    assert "1 EPISODE ENDED BY A PROVIDER LIMIT" in provider_limit_fact(1)
    assert "3 EPISODES" in provider_limit_fact(3)
    assert provider_limit_fact(0) == provider_limit_fact(None) == ""


@pytest.mark.parametrize("kind", ["usage-limit-429", "rate-limit-held"])
def test_the_held_fault_kinds_parse(kind: str) -> None:
    rule = parse_fault_rule(f"{kind}@1:fix-median:optimizer:0")
    assert (rule.fault.kind, rule.repetition) == (kind, 0)
    with pytest.raises(InvalidInputError, match="usage-limit-429"):
        parse_fault_rule("usage-limit-430@1")
