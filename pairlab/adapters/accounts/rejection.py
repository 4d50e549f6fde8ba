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

A provider whose TLS certificate the CLI does not trust is not a rejected credential:
``provider-tls-untrusted`` (:func:`untrusted_tls`). Claude Code 2.1.332 says so in its
``result`` line (``api_error`` ``tls_untrusted_ca``, or a ``result`` text "SSL certificate
verification failed"). Codex 0.163.0 does not (it retries "error sending request" until
the episode's timeout), so for both CLIs the run first checks the provider's certificate
itself, before anything runs (``provider_tls.check_provider_tls``).
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


_TLS_ERRORS = ("tls_untrusted_ca", "tls_cert_invalid", "tls_hostname_mismatch")


def untrusted_tls(client: str, stdout: str) -> str | None:
    """The CLI's message when it did not trust the provider's TLS certificate, else None."""
    if client != "claude":
        return None
    for event in json_lines(stdout):
        if event.get("type") != "result":
            continue
        text = str(event.get("result") or "")
        if event.get("api_error") in _TLS_ERRORS or "SSL certificate verification failed" in text:
            return text or str(event.get("api_error"))
    return None


def stop_on_rejected_credential(client: str, account: str, stdout: str) -> None:
    """Raise ``credential-rejected`` (exit 2) when the episode's CLI says so, or
    ``provider-tls-untrusted`` when it did not trust the provider."""
    untrusted = untrusted_tls(client, stdout)
    if untrusted is not None:
        raise InvalidInputError(
            f"account {account!r}: {client} did not trust the provider's TLS certificate "
            f"({untrusted[:300]}); nothing was recorded. A gateway with a private CA: register "
            "the account again with `--ca-file CA.pem --replace`",
            reason=ReasonCode.PROVIDER_TLS_UNTRUSTED,
        )
    message = rejected_credential(client, stdout)
    if message is not None:
        raise InvalidInputError(
            f"account {account!r}: the provider rejected the credential ({client} said: "
            f"{message}); nothing was recorded. Check it with `pairlab account check {account}` "
            "and register it again with --replace",
            reason=ReasonCode.CREDENTIAL_REJECTED,
        )
