"""Reading a rejected credential from the real CLIs' stdout (lines as Claude Code 2.1.332
and Codex 0.163.0 printed them against the stand-in provider)."""

from __future__ import annotations

import json

import pytest

from pairlab.adapters.accounts.rejection import rejected_credential, stop_on_rejected_credential
from pairlab.core.errors import InvalidInputError, ReasonCode

CLAUDE_401 = json.dumps(
    {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "api_error_status": 401,
        "api_error_type": "authentication_error",
        "result": "Invalid API key · Fix external API key",
        "terminal_reason": "api_error",
    }
)
CLAUDE_OK = json.dumps({"type": "result", "is_error": False, "result": "Fixed."})
CODEX_MESSAGE = (
    "unexpected status 401 Unauthorized: Incorrect API key provided: sk-pr***RONG. You can "
    "find your API key at https://platform.openai.com/account/api-keys., url: "
    "http://127.0.0.1:38899/v1/responses, request id: req_a58dd44fdf5968392696b175"
)
CODEX_401 = "\n".join(
    [
        json.dumps({"type": "thread.started", "thread_id": "t"}),
        json.dumps({"type": "turn.started"}),
        json.dumps({"type": "error", "message": CODEX_MESSAGE}),
        json.dumps({"type": "turn.failed", "error": {"message": CODEX_MESSAGE}}),
    ]
)
CODEX_500 = json.dumps({"type": "turn.failed", "error": {"message": "unexpected status 500"}})


def test_rejections_are_read_in_each_clis_own_words() -> None:
    assert rejected_credential("claude", "noise\n" + CLAUDE_401) == (
        "Invalid API key · Fix external API key"
    )
    assert rejected_credential("codex", CODEX_401) == CODEX_MESSAGE
    for client, stdout in (("claude", CLAUDE_OK), ("codex", CODEX_500), ("claude", CODEX_401)):
        assert rejected_credential(client, stdout) is None


def test_a_rejection_stops_with_credential_rejected() -> None:
    stop_on_rejected_credential("claude", "own", CLAUDE_OK)  # nothing to stop
    with pytest.raises(InvalidInputError) as stopped:
        stop_on_rejected_credential("claude", "own", CLAUDE_401)
    assert stopped.value.reason == ReasonCode.CREDENTIAL_REJECTED
    assert "'own'" in stopped.value.message and "Invalid API key" in stopped.value.message


# Claude Code 2.1.332's result line against a TLS stand-in whose CA it was not given
CLAUDE_TLS_UNTRUSTED = json.dumps(
    {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "api_error_status": None,
        "api_error": "tls_untrusted_ca",
        "result": "API Error: Unable to connect to API: SSL certificate verification failed "
        "(UNABLE_TO_VERIFY_LEAF_SIGNATURE). The certificates the server sent don't lead to a "
        "trusted authority. ... If it is a TLS-inspecting corporate proxy or a gateway signed "
        "by a private CA, set NODE_EXTRA_CA_CERTS to that CA bundle, or add it to the system "
        "certificate store · see https://code.claude.com/docs/en/network-config",
        "terminal_reason": "api_error",
    }
)


def test_an_untrusted_provider_certificate_is_not_a_rejected_credential() -> None:
    assert rejected_credential("claude", CLAUDE_TLS_UNTRUSTED) is None
    with pytest.raises(InvalidInputError) as caught:
        stop_on_rejected_credential("claude", "gw", CLAUDE_TLS_UNTRUSTED)
    assert caught.value.reason == ReasonCode.PROVIDER_TLS_UNTRUSTED
    assert "UNABLE_TO_VERIFY_LEAF_SIGNATURE" in str(caught.value)
    assert "--ca-file" in str(caught.value)
    stop_on_rejected_credential("claude", "gw", CLAUDE_OK)  # an answer is no refusal
