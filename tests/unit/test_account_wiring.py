"""A ChatGPT login's wiring, the provider route of a Docker account run, and the
stand-in's ChatGPT check (the real CLIs run them in tests/integration/test_account_episode.py)."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import pytest

from pairlab.adapters.accounts.episode_wiring import (
    NO_REFRESH_URL,
    account_host_env,
    account_run_profile,
    account_secret_files,
    check_chatgpt_login,
)
from pairlab.adapters.accounts.provider_route import provider_route
from pairlab.adapters.accounts.rejection import rejected_credential
from pairlab.adapters.emulator.auth_gate import AuthGate
from pairlab.adapters.profiles import load_named_profile
from pairlab.core.accounts import Account, CredentialKind
from pairlab.core.errors import InvalidInputError, ReasonCode

NOW = datetime(2026, 12, 5, tzinfo=UTC)


def _jwt(exp: int) -> str:
    part = base64.urlsafe_b64encode(json.dumps({"exp": exp}).encode()).rstrip(b"=").decode()
    return f"e30.{part}.c2ln"


def _login(access: str, account_id: str = "acct-1") -> str:
    tokens = {
        "id_token": "x",
        "access_token": access,
        "refresh_token": "r",
        "account_id": account_id,
    }
    return json.dumps({"tokens": tokens, "last_refresh": "2026-12-01T00:00:00Z"})


def _account(kind: CredentialKind, url: str | None = None) -> Account:
    client = "claude" if kind == CredentialKind.SUBSCRIPTION_TOKEN else "codex"
    return Account(
        name="a", client=client, kind=kind, provider_url=url, stored_in="t", added_at=NOW
    )


def test_a_chatgpt_login_is_a_file_in_codex_home_and_never_refreshed() -> None:
    account = _account(CredentialKind.CHATGPT_AUTH_JSON)
    assert account.effective_provider_url == "https://chatgpt.com/backend-api/codex"
    wired = account_run_profile(load_named_profile("codex"), account)
    assert wired.secrets == [] and wired.endpoint is None
    provider = next(a for a in wired.args if a.startswith("model_providers."))
    assert 'base_url="https://chatgpt.com/backend-api/codex"' in provider
    assert "requires_openai_auth=true" in provider and "env_key" not in provider
    assert 'chatgpt_base_url="https://chatgpt.com/backend-api"' in wired.args
    assert wired.env["CODEX_REFRESH_TOKEN_URL_OVERRIDE"] == NO_REFRESH_URL
    login = _login("tok")
    assert account_secret_files(account, login) == {".codex/auth.json": login}
    host = account_host_env(wired, login, {"OPENAI_API_KEY": "host-key", "LANG": "C"})
    assert host == {"LANG": "C"}  # the host's key never reaches the episode


def test_a_profile_wired_for_an_account_is_not_wired_again() -> None:
    """Wiring re-points the emulator's URL placeholder; a wired profile has none left, so a
    second wiring (e.g. on Docker, with the provider as the run network reaches it) would
    keep the first URL: it is refused instead (the canary's Docker runs once kept it)."""
    account = _account(CredentialKind.SUBSCRIPTION_TOKEN, "http://127.0.0.1:8765/x")
    wired = account_run_profile(load_named_profile("claude"), account)
    assert any("127.0.0.1:8765" in v for v in wired.env.values())
    with pytest.raises(InvalidInputError) as refused:
        account_run_profile(wired, account, provider_url="http://provider:8765/x")
    assert refused.value.reason == ReasonCode.INVALID_PROFILE


def test_an_expired_chatgpt_login_is_refused_before_anything_runs() -> None:
    account = _account(CredentialKind.CHATGPT_AUTH_JSON)
    stamp = int(NOW.timestamp())
    check_chatgpt_login(account, _login(_jwt(stamp + 60)), now=NOW)
    check_chatgpt_login(account, _login("opaque-token"), now=NOW)  # no exp: the provider decides
    with pytest.raises(InvalidInputError) as refused:
        check_chatgpt_login(account, _login(_jwt(stamp - 60)), now=NOW)
    assert refused.value.reason == ReasonCode.CREDENTIAL_REJECTED
    assert "expired" in refused.value.message and _jwt(stamp - 60) not in refused.value.message


@pytest.mark.parametrize(
    ("url", "alias", "port", "container_url"),
    [
        ("http://127.0.0.1:8765/e/ep-1", "provider", 8765, "http://provider:8765/e/ep-1"),
        ("http://localhost:9000/x", "provider", 9000, "http://provider:9000/x"),
        ("https://api.anthropic.com", "api.anthropic.com", 443, "https://api.anthropic.com"),
        (
            "https://chatgpt.com/backend-api/codex",
            "chatgpt.com",
            443,
            "https://chatgpt.com/backend-api/codex",
        ),
    ],
)
def test_a_docker_account_reaches_its_provider_host_alone(
    url: str, alias: str, port: int, container_url: str
) -> None:
    route = provider_route(url)
    assert (route.service.alias, route.service.port, route.service.listen_port) == (
        alias,
        port,
        port,
    )
    assert route.container_url == container_url


def test_the_stand_in_takes_a_chatgpt_token_only_with_its_account_id() -> None:
    gate = AuthGate.of([_login("tok-1", "acct-9")])
    bearer = {"authorization": "Bearer tok-1"}
    assert gate.refusal("openai", {**bearer, "chatgpt-account-id": "acct-9"}) is None
    for headers in (bearer, {**bearer, "chatgpt-account-id": "acct-other"}):
        refusal = gate.refusal("openai", headers)
        assert refusal is not None and refusal.status == 401


def test_a_refused_chatgpt_login_is_read_from_codex_output() -> None:
    failed = json.dumps(
        {
            "type": "turn.failed",
            "error": {"message": f"error sending request for url ({NO_REFRESH_URL})"},
        }
    )
    message = rejected_credential("codex", failed)
    assert message is not None and "refused the login" in message
    # the same words on a Reconnecting... error line are no verdict yet
    assert (
        rejected_credential("codex", json.dumps({"type": "error", "message": NO_REFRESH_URL}))
        is None
    )


@pytest.mark.parametrize(
    ("kind", "variable"),
    [
        (CredentialKind.SUBSCRIPTION_TOKEN, "NODE_EXTRA_CA_CERTS"),
        (CredentialKind.CHATGPT_AUTH_JSON, "CODEX_CA_CERTIFICATE"),
    ],
)
def test_a_private_ca_is_given_in_the_variable_its_cli_reads(
    kind: CredentialKind, variable: str
) -> None:
    account = _account(kind, "https://gateway.corp.example")
    profile = load_named_profile(account.client)
    wired = account_run_profile(profile, account, ca_path="/run/pairlab-provider-ca.pem")
    assert wired.env[variable] == "/run/pairlab-provider-ca.pem"
    assert variable not in account_run_profile(profile, account).env
    assert variable not in wired.secrets  # a CA is public: no secret
