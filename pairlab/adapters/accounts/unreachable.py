"""An account's provider that an episode could not reach: ``provider-unreachable``.

An episode whose CLI could not connect to the account's provider (a closed port, a
provider that is down, on Docker a relay that cannot connect to it, a provider URL the
episode cannot reach) measured nothing: no model request reached the provider. Recorded,
it would be an episode without usage, and a budget ceiling cannot hold against unknown
spend (the next pair stops ``budget-exhausted``, "spend unknown", which hides the cause).
So the run stops at the first such episode, like a rejected credential: exit 3
``provider-unreachable``, naming the provider's host and port and the CLI's own words;
nothing is recorded for that episode, and a resume with the same run id runs it again.

The rule: the CLI's last word is a connection failure **and** the episode read no
provider-native usage (no model answer reached it). An episode that was answered before
its connection dropped has spent: it is recorded as it is (its usage counts against the
ceiling). What counts, read from the CLI's own output (measured with Claude Code 2.1.332
and Codex 0.163.0 against a closed port and against a server that closes each
connection, as a relay that cannot reach the provider does):

* Claude Code (stream-json or json): the ``result`` line (else the last
  ``is_api_error_message`` line) with ``api_error`` ``connection_failed``, e.g. "API
  Error: Connection refused ... (ECONNREFUSED)" or "API Error: Connection dropped
  (ECONNRESET) ..."; after its own retries (10, about three minutes).
* Codex (``exec --json``): a ``turn.failed`` whose message says "error sending request"
  ("Connection failed: error sending request", "stream disconnected before completion:
  error sending request"); after its 5 reconnects (about 25 s). A ChatGPT login's failed
  token refresh says the same words about the refresh URL: that is a rejected login
  (``rejection.py``), checked first.

On Docker the run network's relay adds what it saw: its last failed connection to the
provider (``RunNetwork.relay_failure``).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pairlab.adapters.accounts.episode_wiring import NO_REFRESH_URL
from pairlab.adapters.clients.base import json_lines
from pairlab.core.accounts import AccountStamp
from pairlab.core.errors import EnvironmentUnavailable, ReasonCode

_CODEX_CONNECTION = "error sending request"


def _claude_words(stdout: str) -> str | None:
    events = list(json_lines(stdout))
    last = next((e for e in reversed(events) if e.get("type") == "result"), None)
    if last is None:  # no result line (killed): the CLI's own error message, if any
        last = next((e for e in reversed(events) if e.get("is_api_error_message")), None)
    if last is None or last.get("api_error") != "connection_failed":
        return None
    text = last.get("result")
    if not text and isinstance(last.get("message"), dict):
        blocks = last["message"].get("content") or []
        text = " ".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))
    return str(text or "connection failed")


def _codex_words(stdout: str) -> str | None:
    for event in reversed(list(json_lines(stdout))):
        if event.get("type") != "turn.failed":
            continue
        error = event.get("error")
        message = error.get("message") if isinstance(error, dict) else event.get("message")
        text = str(message or "")
        if _CODEX_CONNECTION in text and NO_REFRESH_URL not in text:
            return text
        return None
    return None


def connection_failure(client: str, stdout: str) -> str | None:
    """The CLI's own words when its last request could not reach the provider, else None."""
    if client == "claude":
        return _claude_words(stdout)
    if client == "codex":
        return _codex_words(stdout)
    return None


def provider_address(provider_url: str) -> str:
    """``host:port`` of a provider URL (the scheme's port when it names none)."""
    parts = urlsplit(provider_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname or '?'}:{port}"


def stop_on_unreachable_provider(
    client: str,
    account: AccountStamp,
    stdout: str,
    *,
    usage_seen: bool,
    relay_failure: str | None = None,
) -> None:
    """Raise ``provider-unreachable`` (exit 3) when the episode's CLI could not reach the
    account's provider and no usage was read (the module's rule)."""
    words = connection_failure(client, stdout)
    if words is None or usage_seen:
        return
    address = provider_address(account.provider_url)
    relay = f"; the run network's relay: {relay_failure}" if relay_failure else ""
    raise EnvironmentUnavailable(
        f"account {account.name!r}: no request reached the provider at {address} "
        f"({client} said: {words}{relay}); nothing was recorded for this episode. Check "
        f"that the provider is up and reachable from this machine (`pairlab account check "
        f"{account.name} --probe`), then resume with the same run id",
        reason=ReasonCode.PROVIDER_UNREACHABLE,
    )


__all__ = ["connection_failure", "provider_address", "stop_on_unreachable_provider"]
