"""A provider's refusal of an account's credential, read from the real CLI's own stdout.

A rejected credential (401 or 403 from the provider) is not an outcome to measure: the
run stops at the first episode that shows it (``credential-rejected``), and nothing is
recorded or published as evidence. The reason given is the CLI's own message (which
names no credential: the providers mask keys in their answers).

* Claude Code (stream-json or json): the ``result`` line with ``api_error_status`` 401 or
  403; its ``result`` text, e.g. "Invalid API key · Fix external API key".
* Codex (``exec --json``): a ``turn.failed`` or ``error`` event whose message says
  ``401 Unauthorized`` or ``403 Forbidden``. Under a ChatGPT login Codex answers a 401
  by refreshing the login, which an episode never does (``episode_wiring``: the refresh
  goes to a closed port): its ``turn.failed`` then names that refresh URL ("error
  sending request for url (http://127.0.0.1:9/oauth/token)"), measured with Codex
  0.163.0 against the stand-in. A refresh that fails without a 401 (a stale
  ``last_refresh``) is only logged and the turn goes on, so that message means the
  provider refused the access token.
"""

from __future__ import annotations

from pairlab.adapters.accounts.episode_wiring import NO_REFRESH_URL
from pairlab.adapters.clients.base import json_lines
from pairlab.core.errors import InvalidInputError, ReasonCode

_CODEX_REFUSALS = ("401 Unauthorized", "403 Forbidden")


def rejected_credential(client: str, stdout: str) -> str | None:
    """The CLI's message when the provider rejected its credential, else None."""
    for event in json_lines(stdout):
        status = event.get("api_error_status")
        if client == "claude" and event.get("type") == "result" and status in (401, 403):
            return str(event.get("result") or f"HTTP {status}")
        if client == "codex" and event.get("type") in ("turn.failed", "error"):
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else event.get("message")
            if isinstance(message, str) and any(r in message for r in _CODEX_REFUSALS):
                return message
            if event.get("type") == "turn.failed" and NO_REFRESH_URL in str(message):
                return (
                    "the ChatGPT backend refused the login's access token and episodes never "
                    f"refresh it ({message})"
                )
    return None


def stop_on_rejected_credential(client: str, account: str, stdout: str) -> None:
    """Raise ``credential-rejected`` (exit 2) when the episode's CLI says so."""
    message = rejected_credential(client, stdout)
    if message is not None:
        raise InvalidInputError(
            f"account {account!r}: the provider rejected the credential ({client} said: "
            f"{message}); nothing was recorded. Check it with `pairlab account check {account}` "
            "and register it again with --replace",
            reason=ReasonCode.CREDENTIAL_REJECTED,
        )
