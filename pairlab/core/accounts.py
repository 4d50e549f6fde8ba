"""Accounts: an operator's own credential for a real CLI, registered once (issue 27).

Pure rules, no storage: the account record (never the credential), how a credential's
kind is recognised, and the store contract the adapters implement
(``pairlab.adapters.accounts``: a Prefect Secret block when a Prefect server is
configured, else a local file with mode 600).

The rules:

* An account name is lower-case letters, digits and dashes (it names a Prefect block).
* A client has two kinds of credential. Claude Code: ``subscription-token`` (from
  ``claude setup-token``, ``sk-ant-oat...``, read as ``CLAUDE_CODE_OAUTH_TOKEN``) or
  ``api-key`` (read as ``ANTHROPIC_API_KEY``). Codex: ``chatgpt-auth-json`` (a ChatGPT
  login's ``auth.json``, a JSON object with ``tokens``, placed in the episode's
  ``CODEX_HOME``) or ``api-key``. The kind is recognised from the credential's form; a
  declared kind must agree with it.
* An empty credential is ``credential-missing`` (exit 3); a credential of the wrong form
  ``credential-malformed`` (exit 2); an unknown account name ``account-unknown`` (exit 2)
  naming the known ones.
* The record (:class:`Account`) holds name, client, kind, provider URL, where it is stored
  and when it was added: everything ``pairlab account list`` may print. The credential
  travels only as a ``str`` returned by :meth:`AccountStore.credential`.
* The record may carry the latest ``pairlab certify --account`` run on it
  (``certification``, ``core/account_certification``: never the credential); a store
  updates it with :meth:`AccountStore.set_certification`, the credential untouched.
* ``provider_url`` ``None`` means the CLI's own provider (:data:`DEFAULT_PROVIDER_URLS`;
  a ChatGPT login's is the ChatGPT backend, :data:`CHATGPT_PROVIDER_URL`); an account may
  name another (a gateway, a proxy, the stand-in provider).
* ``ca_bundle``: the PEM certificates of a private CA the provider's TLS certificate is
  signed by (a corporate gateway), trusted *in addition to* the public roots. Not a
  secret (certificates only: a private key is refused, :func:`check_ca_bundle`); kept in
  the record itself, so a worker on another machine has it too.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Literal, Protocol

from pairlab.core.account_certification import (
    AccountCertification,
    CertificationStatus,
    certification_status,
)
from pairlab.core.account_kinds import ACCOUNT_CLIENTS as ACCOUNT_CLIENTS
from pairlab.core.account_kinds import AccountClient as AccountClient
from pairlab.core.account_kinds import CredentialKind as CredentialKind
from pairlab.core.account_kinds import public_provider_url
from pairlab.core.errors import EnvironmentUnavailable, InvalidInputError, ReasonCode
from pairlab.core.schemas.base import StrictModel

KINDS_BY_CLIENT: dict[AccountClient, tuple[CredentialKind, ...]] = {
    "claude": (CredentialKind.SUBSCRIPTION_TOKEN, CredentialKind.API_KEY),
    "codex": (CredentialKind.CHATGPT_AUTH_JSON, CredentialKind.API_KEY),
}

# the CLIs' own providers: what an account talks to unless it names another URL
DEFAULT_PROVIDER_URLS: dict[AccountClient, str] = {
    "claude": "https://api.anthropic.com",
    "codex": "https://api.openai.com/v1",
}
# a ChatGPT login talks to the ChatGPT backend, not the Responses API (Codex's own default
# for a ChatGPT auth mode: codex-rs model-provider-info, ``to_api_provider``)
CHATGPT_PROVIDER_URL = "https://chatgpt.com/backend-api/codex"

# the kinds that carry a subscription's usage windows (an API key is billed per token: none)
WINDOW_KINDS: frozenset[CredentialKind] = frozenset(
    {CredentialKind.SUBSCRIPTION_TOKEN, CredentialKind.CHATGPT_AUTH_JSON}
)


def has_subscription_window(kind: CredentialKind) -> bool:
    """Does an account of this kind have subscription windows (five-hour, seven-day)?"""
    return kind in WINDOW_KINDS


_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,47}$")
CLAUDE_SUBSCRIPTION_PREFIX = "sk-ant-oat"


class Account(StrictModel):
    """One registered account, without its credential (safe to print and to record)."""

    schema_version: Literal[1] = 1
    name: str
    client: AccountClient
    kind: CredentialKind
    provider_url: str | None = None
    stored_in: str
    added_at: datetime
    # the latest certify run on the account (core/account_certification); None: never
    certification: AccountCertification | None = None
    ca_bundle: str | None = None  # PEM certificates of the provider's private CA

    def certification_status(self, cli_version: str | None) -> CertificationStatus:
        """Is the recorded certification still what holds, with ``cli_version`` of the
        account's CLI here (None: not readable, not compared)?"""
        return certification_status(
            self.certification,
            client=self.client,
            kind=self.kind,
            provider_url=self.effective_provider_url,
            cli_version=cli_version,
            ca_bundle=self.ca_bundle,
        )

    @property
    def effective_provider_url(self) -> str:
        if self.provider_url:
            return self.provider_url
        if self.kind == CredentialKind.CHATGPT_AUTH_JSON:
            return CHATGPT_PROVIDER_URL
        return DEFAULT_PROVIDER_URLS[self.client]

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "client": self.client,
            "kind": str(self.kind),
            "providerUrl": self.effective_provider_url,
            "isDefaultProvider": self.provider_url is None,
            "storedIn": self.stored_in,
            "addedAt": self.added_at.isoformat(),
            "caBundle": ca_bundle_summary(self.ca_bundle) if self.ca_bundle else None,
        }


_PEM_CERTIFICATE = re.compile(
    r"-----BEGIN CERTIFICATE-----\s+[A-Za-z0-9+/=\s]+?-----END CERTIFICATE-----"
)


def check_ca_bundle(text: str, *, source: str = "the CA file") -> str:
    """A CA bundle as stored: its PEM ``CERTIFICATE`` blocks, one after another.

    None -> ``invalid-ca-bundle`` (exit 2); so is any private key in it (a CA file is
    public; a key next to it is a mistake that must not be stored)."""
    if "PRIVATE KEY" in text:
        raise InvalidInputError(
            f"{source} holds a private key; give the CA's certificate(s) only",
            reason=ReasonCode.INVALID_CA_BUNDLE,
        )
    blocks = _PEM_CERTIFICATE.findall(text)
    if not blocks:
        raise InvalidInputError(
            f"{source} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            reason=ReasonCode.INVALID_CA_BUNDLE,
        )
    return "\n".join(b.strip() for b in blocks) + "\n"


def ca_bundle_summary(bundle: str) -> dict[str, object]:
    """What a listing shows of a CA bundle: how many certificates, and a digest to tell
    two bundles apart (not a certificate fingerprint)."""
    return {
        "certificates": len(_PEM_CERTIFICATE.findall(bundle)),
        "sha256": hashlib.sha256(bundle.encode()).hexdigest()[:16],
    }


class AccountStore(Protocol):
    """Where accounts live. ``location`` says where (printed by ``pairlab account list``)."""

    @property
    def location(self) -> str: ...

    def names(self) -> list[str]: ...

    def save(self, account: Account, credential: str, *, replace: bool) -> None: ...

    def record(self, name: str) -> Account: ...

    def credential(self, name: str) -> str: ...

    def remove(self, name: str) -> None: ...

    def set_certification(self, name: str, certification: AccountCertification) -> Account:
        """Record ``certification`` on the account's record (replacing an earlier one), the
        stored credential untouched; returns the updated record."""
        ...


def check_account_name(name: str) -> str:
    """An account name: lower-case letters, digits, dashes, at most 48 characters."""
    if not _NAME.match(name):
        raise InvalidInputError(
            f"account name {name!r} is not lower-case letters, digits and dashes (1-48)",
            reason=ReasonCode.INVALID_ACCOUNT,
        )
    return name


def unknown_account(name: str, known: list[str]) -> InvalidInputError:
    """``account-unknown`` (exit 2), naming the accounts that exist."""
    listed = ", ".join(sorted(known)) if known else "none registered (pairlab account add)"
    return InvalidInputError(
        f"unknown account {name!r}; known accounts: {listed}", reason=ReasonCode.ACCOUNT_UNKNOWN
    )


def recognise_kind(
    client: AccountClient, credential: str, declared: CredentialKind | None = None
) -> CredentialKind:
    """The credential's kind from its form; a declared kind must agree and fit the client.

    Empty -> ``credential-missing`` (exit 3). Claude: ``sk-ant-oat...`` is a subscription
    token, anything else an API key. Codex: a JSON object with ``tokens`` is a ChatGPT
    login's auth.json, a JSON object without it is malformed, a one-line string an API key.
    """
    text = credential.strip()
    if not text:
        raise EnvironmentUnavailable(
            f"the {client} credential is empty", reason=ReasonCode.CREDENTIAL_MISSING
        )
    seen = _kind_of(client, text)
    if declared is not None and declared not in KINDS_BY_CLIENT[client]:
        allowed = ", ".join(KINDS_BY_CLIENT[client])
        raise InvalidInputError(
            f"{client} takes a credential of kind {allowed}, not {declared}",
            reason=ReasonCode.CREDENTIAL_MALFORMED,
        )
    if declared is not None and declared != seen:
        raise InvalidInputError(
            f"the credential was declared {declared} but reads as {seen}",
            reason=ReasonCode.CREDENTIAL_MALFORMED,
        )
    return seen


def _kind_of(client: AccountClient, text: str) -> CredentialKind:
    if client == "claude":
        if any(ch.isspace() for ch in text):
            raise InvalidInputError(
                "a Claude credential is one token without spaces",
                reason=ReasonCode.CREDENTIAL_MALFORMED,
            )
        if text.startswith(CLAUDE_SUBSCRIPTION_PREFIX):
            return CredentialKind.SUBSCRIPTION_TOKEN
        return CredentialKind.API_KEY
    if text.startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise InvalidInputError(
                "the Codex auth.json is not JSON", reason=ReasonCode.CREDENTIAL_MALFORMED
            ) from exc
        if not isinstance(doc, dict) or not isinstance(doc.get("tokens"), dict):
            raise InvalidInputError(
                "the Codex auth.json has no 'tokens' object (log in with `codex login` first)",
                reason=ReasonCode.CREDENTIAL_MALFORMED,
            )
        return CredentialKind.CHATGPT_AUTH_JSON
    if any(ch.isspace() for ch in text):
        raise InvalidInputError(
            "an OpenAI API key is one token without spaces",
            reason=ReasonCode.CREDENTIAL_MALFORMED,
        )
    return CredentialKind.API_KEY


def _credential_kinds(text: str) -> list[str]:
    """The credential kinds the redaction rules find in ``text`` (not e-mails or paths)."""
    from pairlab.core.redaction import is_credential_kind, scan_text

    return sorted(k for k in scan_text(text) if is_credential_kind(k))


def refuse_credential_parameters(values: Mapping[str, object]) -> None:
    """A credential pasted into a form or command-line parameter is refused
    (``credential-in-parameter``, exit 2) before anything runs: parameters are recorded
    (Prefect keeps them, records and reports name them). The message names the parameter
    and the kind found, never the value; accounts are the way (docs/accounts.md)."""
    for name, value in values.items():
        if value is None:
            continue
        kinds = _credential_kinds(
            value if isinstance(value, str) else json.dumps(value, default=str)
        )
        if kinds:
            raise InvalidInputError(
                f"parameter {name!r} holds what looks like a credential ({', '.join(kinds)}); "
                "never paste one into a parameter: register it with `pairlab account add` "
                "and name the account",
                reason=ReasonCode.CREDENTIAL_IN_PARAMETER,
            )


class AccountStamp(StrictModel):
    """What a run records of its account (``run.json``, the report): never the credential,
    and the provider URL without user info, query or fragment."""

    name: str
    client: AccountClient
    kind: CredentialKind
    provider_url: str
    is_default_provider: bool
    # the account's certification when the run opened it; None: a run recorded before
    # certifications were (unknown, which is not "not certified")
    certification: CertificationStatus | None = None

    @classmethod
    def of(cls, account: Account, certification: CertificationStatus | None = None) -> AccountStamp:
        return cls(
            name=account.name,
            client=account.client,
            kind=account.kind,
            provider_url=public_provider_url(account.effective_provider_url),
            is_default_provider=account.provider_url is None,
            certification=certification,
        )

    def fact(self) -> str:
        """The report's facts-line words: which account, and what its kind means for quota."""
        window = (
            "subscription windows read from the provider's usage endpoint"
            if has_subscription_window(self.kind)
            else "an API key has no subscription window"
        )
        where = "the provider" if self.is_default_provider else self.provider_url
        certified = "" if self.certification is None else f"; {self.certification.fact()}"
        return f" · account {self.name} ({self.client} {self.kind} at {where}; {window}{certified})"
