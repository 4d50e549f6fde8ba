"""The stand-in provider's credential check (``pairlab emulator serve --require-auth``).

Off by default: the emulator a run starts accepts any credential. With a gate, every
provider request (model calls, token counts, the usage endpoints, unserved paths; not
the admin API, ``/healthz`` or a ``HEAD`` connectivity check) must present an accepted
credential, and is answered as the real provider answers otherwise (401, the provider's
error body, its request-id header):

| provider | nothing presented | wrong | expired |
| --- | --- | --- | --- |
| Anthropic | ``authentication_error`` "x-api-key header is required" | ``authentication_error`` "invalid x-api-key" (an OAuth bearer: "Invalid bearer token") | ``authentication_error`` "OAuth token has expired. ..." |
| OpenAI | ``invalid_request_error`` "You didn't provide an API key. ..." | ``invalid_request_error``, code ``invalid_api_key``, "Incorrect API key provided: sk-ab***wxyz. ..." (masked like OpenAI) | ``invalid_request_error``, code ``token_expired`` |

Presented credential: Anthropic's ``x-api-key``, else ``Authorization: Bearer`` (OAuth
tokens, OpenAI keys, a ChatGPT login's access token). A credential given to the gate as
a Codex ``auth.json`` (a ChatGPT login) accepts what Codex sends with it to the ChatGPT
backend: ``Authorization: Bearer <tokens.access_token>`` together with
``chatgpt-account-id: <tokens.account_id>`` (codex-rs login ``auth/manager.rs`` and the
model client). The access token alone, without that account's id, is refused as the
wrong credential (401 ``invalid_api_key``: the stand-in's choice, the real backend's body
for it is not known here). The gate compares in constant time and never writes a
credential anywhere.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pairlab.adapters.emulator.providers import Provider
from pairlab.adapters.emulator.reply import Refusal

ANTHROPIC_MISSING = "x-api-key header is required"
ANTHROPIC_WRONG_KEY = "invalid x-api-key"
ANTHROPIC_WRONG_BEARER = "Invalid bearer token"
ANTHROPIC_EXPIRED = (
    "OAuth token has expired. Please obtain a new token or refresh your existing token."
)
OPENAI_MISSING = (
    "You didn't provide an API key. You need to provide your API key in an Authorization "
    "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field "
    "(with blank username) if you're accessing the API from your browser and are prompted for "
    "a username. You can obtain an API key from https://platform.openai.com/account/api-keys."
)
OPENAI_EXPIRED = "Provided authentication token is expired. Please try signing in again."


def chatgpt_account_ids(credential: str) -> dict[str, str]:
    """``{access token: account id}`` of a Codex auth.json (empty for anything else)."""
    text = credential.strip()
    if not text.startswith("{"):
        return {}
    try:
        doc = json.loads(text)
    except ValueError:
        return {}
    tokens = doc.get("tokens") if isinstance(doc, dict) else None
    if not isinstance(tokens, dict):
        return {}
    access, account = tokens.get("access_token"), tokens.get("account_id")
    if isinstance(access, str) and access and isinstance(account, str) and account:
        return {access: account}
    return {}


def accepted_forms(credential: str) -> list[str]:
    """What a client presents for ``credential``: itself, or an auth.json's access token."""
    text = credential.strip()
    if text.startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError:
            return [text]
        tokens = doc.get("tokens") if isinstance(doc, dict) else None
        forms = [tokens["access_token"]] if isinstance(tokens, dict) else []
        if isinstance(doc, dict) and isinstance(doc.get("OPENAI_API_KEY"), str):
            forms.append(doc["OPENAI_API_KEY"])
        return [f for f in forms if isinstance(f, str) and f] or [text]
    return [text] if text else []


def presented_credential(headers: Mapping[str, str]) -> tuple[str, str] | None:
    """``(how, value)`` of the credential a request presents (headers lower-cased)."""
    key = headers.get("x-api-key", "").strip()
    if key:
        return "x-api-key", key
    auth = headers.get("authorization", "").strip()
    if auth.lower().startswith("bearer ") and auth[7:].strip():
        return "bearer", auth[7:].strip()
    return None


def mask_key(value: str) -> str:
    """OpenAI's masking in its 401 message: the first 5 and last 4 characters."""
    return f"{value[:5]}***{value[-4:]}" if len(value) > 12 else "***"


def _matches(value: str, candidates: frozenset[str]) -> bool:
    found = False
    for candidate in candidates:  # every candidate compared: no early exit
        found |= hmac.compare_digest(value.encode(), candidate.encode())
    return found


@dataclass(frozen=True)
class AuthGate:
    accepted: frozenset[str]
    expired: frozenset[str] = frozenset()
    # a ChatGPT login's access tokens, each with the account id Codex sends beside it
    account_ids: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, accepted: Iterable[str], expired: Iterable[str] = ()) -> AuthGate:
        accepted = list(accepted)
        return cls(
            accepted=frozenset(f for c in accepted for f in accepted_forms(c)),
            expired=frozenset(f for c in expired for f in accepted_forms(c)),
            account_ids={k: v for c in accepted for k, v in chatgpt_account_ids(c).items()},
        )

    def _account_matches(self, token: str, headers: Mapping[str, str]) -> bool:
        """A ChatGPT login's token counts only with its account id beside it."""
        sent = headers.get("chatgpt-account-id", "")
        for access, account in self.account_ids.items():
            if hmac.compare_digest(token.encode(), access.encode()):
                return hmac.compare_digest(sent.encode(), account.encode())
        return True

    def refusal(self, provider: Provider, headers: Mapping[str, str]) -> Refusal | None:
        """``None`` for an accepted credential, else the provider's 401."""
        presented = presented_credential(headers)
        if (
            presented is not None
            and _matches(presented[1], self.accepted)
            and self._account_matches(presented[1], headers)
        ):
            return None
        if provider == "openai":
            return _openai_refusal(presented, self)
        return _anthropic_refusal(presented, self)


def _anthropic_refusal(presented: tuple[str, str] | None, gate: AuthGate) -> Refusal:
    if presented is None:
        return Refusal(401, "authentication_error", ANTHROPIC_MISSING)
    how, value = presented
    if _matches(value, gate.expired):
        return Refusal(401, "authentication_error", ANTHROPIC_EXPIRED)
    return Refusal(
        401,
        "authentication_error",
        ANTHROPIC_WRONG_KEY if how == "x-api-key" else ANTHROPIC_WRONG_BEARER,
    )


def _openai_refusal(presented: tuple[str, str] | None, gate: AuthGate) -> Refusal:
    if presented is None:
        return Refusal(401, "invalid_request_error", OPENAI_MISSING)
    value = presented[1]
    if _matches(value, gate.expired):
        return Refusal(401, "invalid_request_error", OPENAI_EXPIRED, code="token_expired")
    message = (
        f"Incorrect API key provided: {mask_key(value)}. You can find your API key at "
        "https://platform.openai.com/account/api-keys."
    )
    return Refusal(401, "invalid_request_error", message, code="invalid_api_key")


__all__ = [
    "AuthGate",
    "accepted_forms",
    "chatgpt_account_ids",
    "mask_key",
    "presented_credential",
]
