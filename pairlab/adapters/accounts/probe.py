"""``pairlab account check --probe``: ask the account's provider whether it takes the
credential, with a request that spends no tokens (the model list).

Anthropic: ``GET <provider>/v1/models`` with ``x-api-key`` (an API key) or
``Authorization: Bearer`` and the OAuth beta header (a subscription token). OpenAI:
``GET <provider>/models`` with ``Authorization: Bearer``. A ChatGPT login: its usage
endpoint (``quota_wiring.usage_url``, ``.../backend-api/wham/usage``) with the login's
access token as a bearer and ``ChatGPT-Account-Id``, as Codex sends them. A 401 or 403 is
``credential-rejected`` (exit 2) with the provider's own message; any other answer
means the provider did not refuse the credential (the stand-in answers 404 for the model
list once the credential passes). No answer at all is ``environment-unavailable`` (exit 3);
a TLS certificate it does not trust (the public roots plus the account's CA bundle,
``provider_tls``) is ``provider-tls-untrusted`` (exit 2).
"""

from __future__ import annotations

import ssl

import httpx

from pairlab.core.accounts import Account, CredentialKind
from pairlab.core.errors import EnvironmentUnavailable, InvalidInputError, ReasonCode

OAUTH_BETA = "oauth-2025-04-20"
TIMEOUT_S = 20.0


def _request(account: Account, credential: str) -> tuple[str, dict[str, str]]:
    if account.kind == CredentialKind.CHATGPT_AUTH_JSON:
        from pairlab.adapters.accounts.quota_wiring import chatgpt_tokens, usage_url

        access, account_id = chatgpt_tokens(credential)
        headers = {"authorization": f"Bearer {access}"}
        if account_id:
            headers["chatgpt-account-id"] = account_id
        return usage_url(account), headers
    base = account.effective_provider_url.rstrip("/")
    if account.client == "claude":
        headers = {"anthropic-version": "2023-06-01"}
        if account.kind == CredentialKind.SUBSCRIPTION_TOKEN:
            headers |= {"authorization": f"Bearer {credential}", "anthropic-beta": OAUTH_BETA}
        else:
            headers["x-api-key"] = credential
        return f"{base}/v1/models", headers
    return f"{base}/models", {"authorization": f"Bearer {credential}"}


def _provider_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
    except ValueError:
        return response.text[:200]
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return response.text[:200]


def _verification_error(exc: BaseException) -> ssl.SSLCertVerificationError | None:
    """The certificate verification error under an httpx error (its chain), if any."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def probe_credential(account: Account, credential: str) -> int:
    """The provider's HTTP status for the credential; raises when it refused it."""
    from pairlab.adapters.accounts.provider_tls import trust_context, untrusted_provider

    url, headers = _request(account, credential)
    try:
        response = httpx.get(url, headers=headers, timeout=TIMEOUT_S, verify=trust_context(account))
    except httpx.ConnectError as exc:
        cause = _verification_error(exc)
        if cause is not None:
            raise untrusted_provider(account, url, cause) from exc
        raise EnvironmentUnavailable(
            f"the provider at {account.effective_provider_url} did not answer: "
            f"{exc.__class__.__name__}",
            reason=ReasonCode.ENVIRONMENT_UNAVAILABLE,
        ) from exc
    except httpx.HTTPError as exc:
        raise EnvironmentUnavailable(
            f"the provider at {account.effective_provider_url} did not answer: "
            f"{exc.__class__.__name__}",
            reason=ReasonCode.ENVIRONMENT_UNAVAILABLE,
        ) from exc
    if response.status_code in (401, 403):
        raise InvalidInputError(
            f"account {account.name!r}: the provider rejected the credential "
            f"({response.status_code}: {_provider_message(response)})",
            reason=ReasonCode.CREDENTIAL_REJECTED,
        )
    return response.status_code
