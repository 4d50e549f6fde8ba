"""The words an account is described by (issue 27): its client, its credential's kind, and
its provider URL as it may be printed and recorded.

A leaf below ``accounts`` (the record, the store contract) and ``account_certification``
(what ``pairlab certify --account`` proved of it), which both describe an account in
these words.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

AccountClient = Literal["claude", "codex"]
ACCOUNT_CLIENTS: tuple[AccountClient, ...] = ("claude", "codex")


class CredentialKind(StrEnum):
    API_KEY = "api-key"
    SUBSCRIPTION_TOKEN = "subscription-token"
    CHATGPT_AUTH_JSON = "chatgpt-auth-json"


def public_provider_url(url: str) -> str:
    """A provider URL as it may be recorded and printed: without user info, query or
    fragment (a gateway's URL may carry a key there)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


__all__ = ["ACCOUNT_CLIENTS", "AccountClient", "CredentialKind", "public_provider_url"]
