"""HTTP quota probes against a real local http.server on a loopback port."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from pairlab.adapters.quota import make_probe

CLAUDE_USAGE = {
    "five_hour": {"utilization": 37.0, "resets_at": "2026-03-01T15:00:00.512389+00:00"},
    "seven_day": {"utilization": 61.0, "resets_at": "2026-03-04T09:00:00.512411+00:00"},
    "seven_day_oauth_apps": None,
    "seven_day_opus": {"utilization": 0.0, "resets_at": None},
    "extra_usage": {"is_enabled": False, "monthly_limit": None, "used_credits": None},
}
CODEX_USAGE = {
    "plan_type": "plus",
    "rate_limit": {
        "allowed": True,
        "limit_reached": False,
        "primary_window": {
            "used_percent": 23,
            "limit_window_seconds": 18000,
            "reset_after_seconds": 9120,
            "reset_at": 1772380800,
        },
        "secondary_window": {
            "used_percent": 8,
            "limit_window_seconds": 604800,
            "reset_after_seconds": 400000,
            "reset_at": 1772900000,
        },
    },
    "credits": {"has_credits": False, "unlimited": False, "balance": None},
}


class _Handler(BaseHTTPRequestHandler):
    # path -> list of (status, headers, body) served in order; the last one repeats
    script: ClassVar[dict[str, list[tuple[int, dict[str, str], Any]]]] = {}
    seen: ClassVar[list[dict[str, str]]] = []

    def do_GET(self) -> None:
        self.seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
        queue = self.script.get(self.path) or [(404, {}, {"error": "not found"})]
        status, headers, body = queue.pop(0) if len(queue) > 1 else queue[0]
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        del format, args


@pytest.fixture()
def server() -> Iterator[str]:
    _Handler.script, _Handler.seen = {}, []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_claude_oauth_usage_windows(server: str) -> None:
    _Handler.script["/api/oauth/usage"] = [(200, {}, CLAUDE_USAGE)]
    probe = make_probe("claude-oauth-usage", url=server + "/api/oauth/usage", token="tok-x")
    obs = {(o.provider, o.window): o for o in probe.snapshot()}
    assert obs[("claude", "five-hour")].used_percent == 37.0
    assert obs[("claude", "five-hour")].resets_at == datetime(2026, 3, 1, 15, 0, 0, 512389, UTC)
    assert obs[("claude", "five-hour")].precision_percent == 1.0
    assert obs[("claude", "seven-day")].used_percent == 61.0
    assert obs[("claude:opus", "seven-day")].resets_at is None
    assert ("claude:oauth_apps", "seven-day") not in obs  # null window
    assert _Handler.seen[0]["authorization"] == "Bearer tok-x"
    assert _Handler.seen[0]["anthropic-beta"] == "oauth-2025-04-20"


def test_claude_429_retry_after_within_bound_is_honoured(server: str) -> None:
    _Handler.script["/u"] = [
        (429, {"Retry-After": "1"}, {"error": "rate_limited"}),
        (200, {}, CLAUDE_USAGE),
    ]
    probe = make_probe("claude-oauth-usage", url=server + "/u", token="t", max_retry_wait_s=2)
    obs = probe.snapshot()
    assert len(_Handler.seen) == 2
    assert any(o.used_percent == 37.0 for o in obs)


def test_claude_429_retry_after_beyond_bound_is_unknown(server: str) -> None:
    _Handler.script["/u"] = [
        (429, {"Retry-After": "120"}, {"error": "rate_limited"}),
        (200, {}, CLAUDE_USAGE),
    ]
    probe = make_probe("claude-oauth-usage", url=server + "/u", token="t", max_retry_wait_s=2)
    obs = probe.snapshot()
    assert len(_Handler.seen) == 1  # did not wait two minutes, did not hammer
    assert obs and all(o.used_percent is None for o in obs)
    assert all(o.source == "claude-oauth-usage:unavailable:rate-limited" for o in obs)


def test_persistent_429_gives_up_after_bounded_attempts(server: str) -> None:
    _Handler.script["/u"] = [(429, {"Retry-After": "0"}, {"error": "rate_limited"})]
    obs = make_probe("claude-oauth-usage", url=server + "/u", token="t").snapshot()
    assert len(_Handler.seen) == 2
    assert all("rate-limited" in o.source and o.used_percent is None for o in obs)


def test_codex_usage_endpoint_windows_by_length(server: str) -> None:
    _Handler.script["/backend-api/wham/usage"] = [(200, {}, CODEX_USAGE)]
    probe = make_probe(
        "codex-usage-endpoint",
        url=server + "/backend-api/wham/usage",
        token="tok",
        account_id="acct-1",
    )
    obs = {o.window: o for o in probe.snapshot()}
    assert obs["five-hour"].used_percent == 23.0
    assert obs["five-hour"].resets_at == datetime.fromtimestamp(1772380800, UTC)
    assert obs["seven-day"].used_percent == 8.0
    assert _Handler.seen[0]["chatgpt-account-id"] == "acct-1"


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (401, {"error": "unauthorized"}, "http-401"),
        (200, b"<html>", "malformed"),
        (500, {"error": "boom"}, "http-500"),
    ],
)
def test_codex_endpoint_failures_are_explicit_unknowns(
    server: str, status: int, body: Any, reason: str
) -> None:
    _Handler.script["/u"] = [(status, {}, body)]
    obs = make_probe("codex-usage-endpoint", url=server + "/u", token="t").snapshot()
    assert obs and all(o.used_percent is None and o.source.endswith(reason) for o in obs)


def test_unreachable_and_tokenless_probes_are_unknown() -> None:
    obs = make_probe(
        "codex-usage-endpoint", url="http://127.0.0.1:9/u", token="t", timeout_s=2
    ).snapshot()
    assert all(o.source.endswith("unreachable") for o in obs)
    assert all("no-token" in o.source for o in make_probe("claude-oauth-usage").snapshot())


def test_http_sources_state_no_reset_or_window_they_do_not_state(server: str) -> None:
    """A reset time without a zone is not an instant (unknown, never read as UTC); a window
    without its length is other:0, never a slot's guess."""
    _Handler.script["/claude"] = [
        (200, {}, {"five_hour": {"utilization": 12.0, "resets_at": "2026-03-01T15:00:00"}})
    ]
    (claude,) = make_probe("claude-oauth-usage", url=server + "/claude", token="t").snapshot()
    assert claude.used_percent == 12.0 and claude.resets_at is None and claude.reset_id is None
    _Handler.script["/codex"] = [
        (
            200,
            {},
            {
                "rate_limit": {
                    "primary_window": {"used_percent": 4, "reset_at": "2026-03-01T15:00:00"},
                    "secondary_window": {"used_percent": 9, "limit_window_seconds": 604800},
                }
            },
        )
    ]
    obs = make_probe("codex-usage-endpoint", url=server + "/codex", token="t").snapshot()
    by_window = {o.window: o for o in obs}
    assert by_window["other:0"].used_percent == 4.0 and by_window["other:0"].resets_at is None
    assert by_window["seven-day"].resets_at is None  # no reset stated at all
