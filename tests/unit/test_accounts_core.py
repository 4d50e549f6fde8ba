"""The account rules (pairlab.core.accounts): names, credential kinds, unknown accounts."""

from __future__ import annotations

import json

import pytest

from pairlab.core.accounts import (
    CredentialKind,
    check_account_name,
    recognise_kind,
    unknown_account,
)
from pairlab.core.errors import EnvironmentUnavailable, InvalidInputError, ReasonCode

AUTH_JSON = json.dumps(
    {"OPENAI_API_KEY": None, "tokens": {"access_token": "a", "refresh_token": "r"}}
)


@pytest.mark.parametrize(
    ("client", "credential", "kind"),
    [
        ("claude", "sk-ant-oat01-abc", CredentialKind.SUBSCRIPTION_TOKEN),
        ("claude", "sk-ant-api03-abc", CredentialKind.API_KEY),
        ("codex", "sk-proj-abc", CredentialKind.API_KEY),
        ("codex", AUTH_JSON, CredentialKind.CHATGPT_AUTH_JSON),
    ],
)
def test_kind_is_recognised_from_the_credential(client: str, credential: str, kind: str) -> None:
    assert recognise_kind(client, credential) == kind  # type: ignore[arg-type]
    assert recognise_kind(client, credential, CredentialKind(kind)) == kind  # type: ignore[arg-type]


def test_a_declared_kind_must_agree_and_fit_the_client() -> None:
    with pytest.raises(InvalidInputError) as wrong:
        recognise_kind("claude", "sk-ant-api03-abc", CredentialKind.SUBSCRIPTION_TOKEN)
    assert wrong.value.reason == ReasonCode.CREDENTIAL_MALFORMED
    with pytest.raises(InvalidInputError) as foreign:
        recognise_kind("claude", "sk-ant-api03-abc", CredentialKind.CHATGPT_AUTH_JSON)
    assert "claude takes" in foreign.value.message


@pytest.mark.parametrize(
    ("client", "credential"),
    [("codex", '{"tokens": "x"}'), ("codex", "{not json"), ("claude", "two words")],
)
def test_malformed_credentials_are_refused(client: str, credential: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        recognise_kind(client, credential)  # type: ignore[arg-type]
    assert refused.value.reason == ReasonCode.CREDENTIAL_MALFORMED and refused.value.exit_code == 2


def test_an_empty_credential_is_missing_exit_3() -> None:
    with pytest.raises(EnvironmentUnavailable) as missing:
        recognise_kind("codex", "  \n")
    assert missing.value.reason == ReasonCode.CREDENTIAL_MISSING and missing.value.exit_code == 3


def test_names_and_unknown_accounts() -> None:
    assert check_account_name("team-max-1") == "team-max-1"
    for bad in ("", "Upper", "-lead", "a b", "x" * 49):
        with pytest.raises(InvalidInputError):
            check_account_name(bad)
    err = unknown_account("nope", ["b", "a"])
    assert err.exit_code == 2 and err.reason == ReasonCode.ACCOUNT_UNKNOWN
    assert "a, b" in err.message


def test_the_stamp_a_run_records_names_no_credential_and_says_what_the_kind_means() -> None:
    from datetime import UTC, datetime

    from pairlab.core.accounts import Account, AccountStamp

    def account(kind: CredentialKind, url: str | None) -> Account:
        return Account(
            name="own", client="claude", kind=kind, provider_url=url, stored_in="file:x",
            added_at=datetime(2026, 12, 4, tzinfo=UTC),
        )  # fmt: skip

    gateway = AccountStamp.of(
        account(CredentialKind.API_KEY, "https://user:pw@gw.example:8443/anthropic?k=v")
    )
    assert gateway.provider_url == "https://gw.example:8443/anthropic"
    assert not gateway.is_default_provider
    assert "pw" not in gateway.fact() and "an API key has no subscription window" in gateway.fact()
    own = AccountStamp.of(account(CredentialKind.SUBSCRIPTION_TOKEN, None))
    assert own.is_default_provider and own.provider_url == "https://api.anthropic.com"
    assert own.fact() == (
        " · account own (claude subscription-token at the provider; "
        "subscription windows read from the provider's usage endpoint)"
    )


CERT = "-----BEGIN CERTIFICATE-----\nMIIBdzCCAR2gAwIBAgIU\nAbCd+/==\n-----END CERTIFICATE-----"


def test_a_ca_bundle_keeps_its_certificates_and_refuses_keys_and_nothing() -> None:
    from pairlab.core.accounts import ca_bundle_summary, check_ca_bundle

    bundle = check_ca_bundle(f"subject=CN x\n{CERT}\n\nissuer=...\n{CERT}\n")
    assert bundle == f"{CERT}\n{CERT}\n"  # the PEM blocks only, the comments dropped
    assert ca_bundle_summary(bundle)["certificates"] == 2
    for text in (f"{CERT}\n-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----", "x"):
        with pytest.raises(InvalidInputError) as caught:
            check_ca_bundle(text)
        assert caught.value.reason == ReasonCode.INVALID_CA_BUNDLE
