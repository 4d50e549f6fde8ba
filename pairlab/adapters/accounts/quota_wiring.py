"""An account's subscription windows, read from the provider's own usage surfaces.

The account's run profile (``episode_wiring.account_run_profile``) names its quota probe
and, as the probe's only option, the account's **name** (:func:`account_quota_source`):
the profile is recorded, so it never holds the credential or a URL that could carry one.
Each snapshot (:func:`pairlab.adapters.quota.account.snapshot_quota`) resolves the name
here, reads the record and credential from the account store at that moment, and builds
the probe with them (:func:`account_probe_options`); the credential lives only in that
call's request headers.

| client | kind | probe | usage endpoint | credential |
| --- | --- | --- | --- | --- |
| claude | subscription-token | ``claude-oauth-usage`` | ``<provider>/api/oauth/usage`` | ``Authorization: Bearer`` + the OAuth beta header |
| codex | chatgpt-auth-json | ``codex-usage-endpoint`` | ``<chatgpt base>/backend-api/wham/usage`` | the login's ``tokens.access_token``; ``ChatGPT-Account-Id`` = ``tokens.account_id`` |
| any | api-key | ``no-window`` | none: an API key has no subscription window | none |

The Claude provider URL is the account's (``https://api.anthropic.com`` unless it names
another: the stand-in's ``/e/<token>`` serves the same path). A ChatGPT login talks to
``https://chatgpt.com/backend-api`` unless the account names another base (a trailing
``/v1``, ``/backend-api`` or ``/backend-api/codex`` is taken off first: the login's provider
URL, ``https://chatgpt.com/backend-api/codex`` by default, names the usage endpoint's base).
"""

from __future__ import annotations

import json
from typing import Final

from pairlab.core.accounts import Account, CredentialKind
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.profile import QuotaSource

ACCOUNT_OPTION: Final = "account"  # the one option an account's probe carries: its name
NO_WINDOW_PROBE: Final = "no-window"


def account_quota_source(account: Account) -> QuotaSource:
    """The quota source of the account's run profile (the table in the module doc)."""
    if account.kind == CredentialKind.API_KEY:
        return QuotaSource(probe=NO_WINDOW_PROBE, options={"provider": account.client})
    probe = "claude-oauth-usage" if account.client == "claude" else "codex-usage-endpoint"
    return QuotaSource(probe=probe, options={ACCOUNT_OPTION: account.name})


def usage_url(account: Account) -> str:
    """Where the account's subscription usage is read (module doc)."""
    if account.client == "claude":
        return account.effective_provider_url.rstrip("/") + "/api/oauth/usage"
    base = account.effective_provider_url.rstrip("/")
    for tail in ("/v1", "/backend-api/codex", "/backend-api"):
        if base.endswith(tail):
            base = base[: -len(tail)]
            break
    return base + "/backend-api/wham/usage"


def chatgpt_tokens(credential: str) -> tuple[str, str | None]:
    """A ChatGPT login's access token and account id, from its ``auth.json``."""
    try:
        tokens = json.loads(credential).get("tokens")
    except (ValueError, AttributeError) as exc:
        raise InvalidInputError(
            "the ChatGPT login is not an auth.json object", reason=ReasonCode.CREDENTIAL_MALFORMED
        ) from exc
    access = tokens.get("access_token") if isinstance(tokens, dict) else None
    if not isinstance(access, str) or not access:
        raise InvalidInputError(
            "the ChatGPT login's auth.json has no tokens.access_token (log in again with "
            "`codex login`)",
            reason=ReasonCode.CREDENTIAL_MALFORMED,
        )
    account_id = tokens.get("account_id")
    return access, account_id if isinstance(account_id, str) and account_id else None


def account_probe_options(account: Account, credential: str) -> dict[str, object]:
    """The probe's options for one snapshot: the usage URL and the credential in the form
    the endpoint takes (never stored, never recorded), and the account's CA bundle."""
    if account.kind == CredentialKind.API_KEY:
        return {"provider": account.client}
    tls: dict[str, object] = {"ca_bundle": account.ca_bundle} if account.ca_bundle else {}
    if account.kind == CredentialKind.CHATGPT_AUTH_JSON:
        access, account_id = chatgpt_tokens(credential)
        options: dict[str, object] = {"url": usage_url(account), "token": access}
        return options | {"account_id": account_id} | tls
    return {"url": usage_url(account), "token": credential, **tls}


def resolve_account_options(options: dict[str, object]) -> dict[str, object]:
    """A profile's probe options with the account's name replaced by what one snapshot
    needs (the store read now); options without an account name are returned as they are."""
    name = options.get(ACCOUNT_OPTION)
    if not isinstance(name, str):
        return options
    from pairlab.adapters.accounts.selection import load_account

    account, credential = load_account(name)
    rest = {k: v for k, v in options.items() if k != ACCOUNT_OPTION}
    return rest | account_probe_options(account, credential)


__all__ = [
    "ACCOUNT_OPTION",
    "NO_WINDOW_PROBE",
    "account_probe_options",
    "account_quota_source",
    "chatgpt_tokens",
    "resolve_account_options",
    "usage_url",
]
