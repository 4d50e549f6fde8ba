"""An account's provider an episode could not reach, read from the real CLIs' stdout (lines
as Claude Code 2.1.332 and Codex 0.163.0 printed them against a closed port and against a
server that closes every connection, as a relay that cannot reach the provider does), and
the relay's own account of the connection it could not make."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from pairlab.adapters.accounts.episode_wiring import NO_REFRESH_URL
from pairlab.adapters.accounts.unreachable import (
    connection_failure,
    provider_address,
    stop_on_unreachable_provider,
)
from pairlab.adapters.backends.relay import UnixToTcpForwarder
from pairlab.core.accounts import AccountStamp, CredentialKind
from pairlab.core.errors import EnvironmentUnavailable, ReasonCode

REFUSED = "API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)"
DROPPED = (
    "API Error: Connection dropped (ECONNRESET). Check the gateway set in ANTHROPIC_BASE_URL, "
    "then try again."
)


def _claude(text: str, api_error: str = "connection_failed") -> str:
    synthetic = {
        "type": "assistant",
        "message": {"model": "<synthetic>", "content": [{"type": "text", "text": text}]},
        "error": "server_error",
        "is_api_error_message": True,
        "api_error": api_error,
    }
    result = {
        "type": "result", "subtype": "success", "is_error": True, "api_error_status": None,
        "api_error": api_error, "result": text, "terminal_reason": "api_error",
    }  # fmt: skip
    return "\n".join(json.dumps(e) for e in (synthetic, result))


def _codex(message: str) -> str:
    events = [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        *({"type": "error", "message": f"Reconnecting... {n}/5 ({message})"} for n in (1, 2)),
        {"type": "error", "message": message},
        {"type": "turn.failed", "error": {"message": message}},
    ]
    return "\n".join(json.dumps(e) for e in events)


def _stamp(url: str = "http://127.0.0.1:9/e/tok") -> AccountStamp:
    return AccountStamp(
        name="own",
        client="claude",
        kind=CredentialKind.SUBSCRIPTION_TOKEN,
        provider_url=url,
        is_default_provider=False,
    )


def test_connection_failures_are_read_in_each_clis_own_words() -> None:
    assert connection_failure("claude", "noise\n" + _claude(REFUSED)) == REFUSED
    assert connection_failure("claude", _claude(DROPPED)) == DROPPED
    killed = _claude(REFUSED).splitlines()[0]  # no result line: the synthetic message's words
    assert connection_failure("claude", killed) == REFUSED
    refused = "Connection failed: error sending request"
    dropped = "stream disconnected before completion: error sending request"
    assert connection_failure("codex", _codex(refused)) == refused
    assert connection_failure("codex", _codex(dropped)) == dropped
    # not a connection failure: a 401, an overloaded provider, a finished turn, a ChatGPT
    # login's refused refresh (credential-rejected, read first), another CLI's lines
    refresh = f"error sending request for url ({NO_REFRESH_URL})"
    for client, stdout in (
        ("claude", _claude("Invalid API key", api_error="authentication_failed")),
        ("claude", json.dumps({"type": "result", "is_error": False, "result": "Fixed."})),
        ("codex", _codex("unexpected status 500 Internal Server Error")),
        ("codex", _codex(refresh)),
        ("codex", json.dumps({"type": "turn.completed", "usage": {"input_tokens": 3}})),
        ("claude", _codex(refused)),
        ("gemini", _claude(REFUSED)),
    ):
        assert connection_failure(client, stdout) is None, stdout


def test_provider_addresses_name_the_port() -> None:
    assert provider_address("http://127.0.0.1:9/e/tok") == "127.0.0.1:9"
    assert provider_address("https://api.anthropic.com") == "api.anthropic.com:443"
    assert provider_address("http://gateway.internal/v1") == "gateway.internal:80"


def test_an_unreachable_provider_stops_with_provider_unreachable() -> None:
    stop_on_unreachable_provider("claude", _stamp(), _claude(REFUSED), usage_seen=True)  # spent
    stop_on_unreachable_provider("claude", _stamp(), "", usage_seen=False)  # nothing said
    with pytest.raises(EnvironmentUnavailable) as stopped:
        stop_on_unreachable_provider(
            "claude",
            _stamp(),
            _claude(DROPPED),
            usage_seen=False,
            relay_failure="could not connect to 127.0.0.1:9: [Errno 111] Connection refused",
        )
    error = stopped.value
    assert error.reason == ReasonCode.PROVIDER_UNREACHABLE and error.exit_code == 3
    assert "'own'" in error.message and "provider at 127.0.0.1:9" in error.message
    assert "ECONNRESET" in error.message and "[Errno 111] Connection refused" in error.message


def test_the_relay_keeps_its_last_failed_connection(tmp_path: Path) -> None:
    """The host half of a run network's relay, to a port nothing listens on: the episode's
    connection is closed and the forwarder says which address it could not reach."""
    with socket.socket() as probe:  # a free port, closed again
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    forwarder = UnixToTcpForwarder(str(tmp_path / "provider.sock"), "127.0.0.1", port)
    try:
        assert forwarder.last_failure is None
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(10)
            client.connect(forwarder.path)
            assert client.recv(1) == b""  # closed: nothing reached the service
        assert forwarder.last_failure is not None
        assert forwarder.last_failure.startswith(f"could not connect to 127.0.0.1:{port}: ")
        assert "refused" in forwarder.last_failure.lower()
    finally:
        forwarder.close()
