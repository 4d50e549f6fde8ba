"""The stand-in provider: ``pairlab emulator serve --require-auth`` started as an external
server, answering a missing, wrong or expired credential as the provider does, and the real
Claude Code and Codex showing their own message for a rejected credential."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from pairlab.core.schemas.quota import QuotaObservation
from tests.real_cli_bins import claude_binary, codex_binary
from tests.support import CATALOG_DIR, REPO_ROOT, pairlab_argv

GOOD = "sk-ant-api03-GOOD-standin-credential-51d0"
EXPIRED = "sk-ant-oat01-EXPIRED-standin-credential-77aa"
CODEX_ACCESS = "eyJ-standin-chatgpt-access-token-3c2b"
WRONG_CLAUDE = "sk-ant-api03-WRONG-standin-credential-0000"
WRONG_OPENAI = "sk-proj-WRONG-standin-credential-9999"


@dataclass
class StandIn:
    url: str
    ledgers: Path


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandIn]:
    root = tmp_path_factory.mktemp("standin")
    auth_json = root / "auth.json"
    auth_json.write_text(json.dumps({"tokens": {"access_token": CODEX_ACCESS}}))
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "STANDIN_GOOD": GOOD}
    argv = pairlab_argv(
        "emulator", "serve", "--port", "0", "--ledger-dir", str(root / "ledgers"),
        "--catalog-dir", str(CATALOG_DIR), "--require-auth",
        "--accept-credential", "env:STANDIN_GOOD",
        "--accept-credential", f"file:{auth_json}",
        "--expired-credential", EXPIRED,
    )  # fmt: skip
    server = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env=env,
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert "credentials required (2 accepted)" in first, first
        yield StandIn(url=first.split()[4], ledgers=root / "ledgers")
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()


def _anthropic(url: str, **headers: str) -> httpx.Response:
    body = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    return httpx.post(
        f"{url}/v1/messages", json=body, headers={"anthropic-version": "2023-06-01", **headers}
    )


def test_provider_answers_for_missing_wrong_and_expired(standin: StandIn) -> None:
    missing = _anthropic(standin.url)
    assert missing.status_code == 401 and missing.headers["request-id"]
    assert missing.json()["type"] == "error"
    assert missing.json()["error"] == {
        "type": "authentication_error",
        "message": "x-api-key header is required",
    }
    wrong = _anthropic(standin.url, **{"x-api-key": WRONG_CLAUDE})
    assert wrong.json()["error"]["message"] == "invalid x-api-key"
    expired = _anthropic(standin.url, authorization=f"Bearer {EXPIRED}")
    assert expired.status_code == 401
    assert expired.json()["error"]["message"].startswith("OAuth token has expired")

    openai_wrong = httpx.post(
        f"{standin.url}/v1/responses", json={}, headers={"authorization": f"Bearer {WRONG_OPENAI}"}
    )
    assert openai_wrong.status_code == 401 and openai_wrong.headers["x-request-id"]
    error = openai_wrong.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "invalid_api_key"
    assert "sk-pr***9999" in error["message"] and WRONG_OPENAI not in error["message"]

    # the subscription usage endpoints: refused without, served with an accepted credential
    usage = f"{standin.url}/a/ops/api/oauth/usage"
    assert httpx.get(usage, headers={"authorization": f"Bearer {WRONG_CLAUDE}"}).status_code == 401
    served = httpx.get(usage, headers={"authorization": f"Bearer {GOOD}"})
    assert served.status_code == 200 and "five_hour" in served.json()
    wham = f"{standin.url}/a/ops/backend-api/wham/usage"
    assert httpx.get(wham, headers={"authorization": f"Bearer {CODEX_ACCESS}"}).status_code == 200
    # the admin API and liveness are not the provider's: no credential needed
    assert httpx.get(f"{standin.url}/healthz").json()["ok"] is True

    # refusals are logged, the credentials never
    log = (standin.ledgers / "unrouted.jsonl").read_text()
    assert '"kind": "unauthenticated"' in log
    for secret in (GOOD, EXPIRED, WRONG_CLAUDE, WRONG_OPENAI, CODEX_ACCESS):
        assert secret not in log


def _quiet_env(tmp: Path) -> dict[str, str]:
    (tmp / "home").mkdir()
    (tmp / "tmp").mkdir()
    (tmp / "work").mkdir()
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp / "home"),
        "TMPDIR": str(tmp / "tmp"),
        "TERM": "dumb",
    }


@pytest.mark.realcli
def test_real_claude_code_shows_its_own_message_for_a_wrong_key(
    standin: StandIn, tmp_path: Path
) -> None:
    env = {
        **_quiet_env(tmp_path),
        "IS_SANDBOX": "1",
        "CLAUDE_CODE_TMPDIR": str(tmp_path / "tmp"),
        "ANTHROPIC_BASE_URL": standin.url,
        "ANTHROPIC_API_KEY": WRONG_CLAUDE,
        # Claude Code retries a 401 about ten times with backoff; one retry is enough here
        "CLAUDE_CODE_MAX_RETRIES": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
    proc = subprocess.run(
        [str(claude_binary()), "-p", "hi", "--output-format", "json",
         "--dangerously-skip-permissions"],
        env=env, cwd=tmp_path / "work", capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    result = json.loads(proc.stdout)
    assert result["is_error"] is True
    assert result["api_error_status"] == 401
    assert result["api_error_type"] == "authentication_error"
    assert "Invalid API key" in result["result"]  # Claude Code's own words for it


@pytest.mark.realcli
def test_real_codex_shows_its_own_message_for_a_wrong_key(standin: StandIn, tmp_path: Path) -> None:
    env = {**_quiet_env(tmp_path), "CODEX_HOME": str(tmp_path / "home"), "KEY": WRONG_OPENAI}
    provider = (
        f'{{name="stand-in",base_url="{standin.url}/v1",wire_api="responses",env_key="KEY",'
        "request_max_retries=0,stream_max_retries=0}"
    )
    proc = subprocess.run(
        [str(codex_binary()), "exec", "--skip-git-repo-check", "--json",
         "--dangerously-bypass-approvals-and-sandbox", "--disable", "plugins",
         "--disable", "unbounded_connection_retries", "-m", "gpt-5.5",
         "-c", 'model_provider="standin"', "-c", f"model_providers.standin={provider}", "hi"],
        env=env, cwd=tmp_path / "work", capture_output=True, text=True, timeout=300,
        check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 1
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    failed = [e for e in events if e["type"] == "turn.failed"]
    assert len(failed) == 1
    message = failed[0]["error"]["message"]
    assert "401 Unauthorized" in message and "Incorrect API key provided" in message
    assert WRONG_OPENAI not in proc.stdout + proc.stderr  # masked by the provider


def test_accept_without_require_auth_is_refused() -> None:
    proc = subprocess.run(
        pairlab_argv("emulator", "serve", "--port", "0", "--accept-credential", "x"),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 2 and "--require-auth" in proc.stderr


def test_account_check_probe_asks_the_provider(standin: StandIn, tmp_path: Path) -> None:
    """``pairlab account check --probe`` against the stand-in: accepted, expired, wrong."""
    from tests.standin_support import local_accounts_env

    env = local_accounts_env(tmp_path, GOOD_KEY=GOOD, OLD_TOKEN=EXPIRED, BAD_KEY=WRONG_OPENAI)

    def pairlab(*args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            pairlab_argv(*args), env=env, capture_output=True, text=True, timeout=180, check=False
        )
        assert "Traceback" not in proc.stderr
        for secret in (GOOD, EXPIRED, WRONG_OPENAI):
            assert secret not in proc.stdout + proc.stderr
        return proc

    for name, client, var, suffix in (
        ("good", "claude", "GOOD_KEY", ""),
        ("old", "claude", "OLD_TOKEN", ""),
        ("bad", "codex", "BAD_KEY", "/v1"),
    ):
        added = pairlab(
            "account", "add", name, "--client", client, "--from-env", var,
            "--provider-url", standin.url + suffix,
        )  # fmt: skip
        assert added.returncode == 0, added.stderr

    good = pairlab("account", "check", "good", "--probe", "--json")
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["probeStatus"] == 404  # passed the gate; no model list
    old = pairlab("account", "check", "old", "--probe", "--json")
    assert old.returncode == 2
    refused = json.loads(old.stdout)
    assert refused["reason_code"] == "credential-rejected"
    assert "OAuth token has expired" in refused["error"]
    bad = pairlab("account", "check", "bad", "--probe", "--json")
    assert bad.returncode == 2 and "Incorrect API key provided" in json.loads(bad.stdout)["error"]


def test_an_accounts_windows_are_read_from_the_providers_usage_endpoint(
    standin: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The account's quota probe at the HTTP level (adapters/accounts/quota_wiring.py): a
    ChatGPT login reads Codex's usage endpoint with its access token, an expired Claude
    subscription token is refused (its windows unknown, never 0), an API key has no window;
    the profile carries only the account's name."""
    from datetime import UTC, datetime

    from pairlab.adapters.accounts.local_file import LocalFileAccountStore
    from pairlab.adapters.accounts.quota_wiring import account_quota_source
    from pairlab.adapters.profiles import load_profile_file
    from pairlab.adapters.quota.account import snapshot_quota
    from pairlab.core.accounts import Account, recognise_kind

    monkeypatch.setenv("PAIRLAB_ACCOUNTS_FILE", str(tmp_path / "config" / "accounts.json"))
    monkeypatch.setenv("PAIRLAB_ACCOUNT_STORE", "file")
    store = LocalFileAccountStore()
    login = json.dumps({"tokens": {"access_token": CODEX_ACCESS, "account_id": "acct-7"}})

    def windows(name: str, client: str, credential: str, url: str) -> list[QuotaObservation]:
        kind = recognise_kind(client, credential)  # type: ignore[arg-type]
        account = Account(
            name=name, client=client, kind=kind, provider_url=url, stored_in="file",  # type: ignore[arg-type]
            added_at=datetime.now(UTC),
        )  # fmt: skip
        store.save(account, credential, replace=True)
        source = account_quota_source(account)
        assert credential not in json.dumps(source.model_dump())  # the name only
        profile = load_profile_file(REPO_ROOT / "runner_profiles" / f"{client}.yaml")
        return snapshot_quota(profile.model_copy(update={"quota": source}), None)

    chatgpt = windows("plus", "codex", login, f"{standin.url}/a/ops")
    assert {o.window for o in chatgpt} == {"five-hour", "seven-day"}
    assert all(o.used_percent is not None and o.source == "codex-usage-endpoint" for o in chatgpt)
    expired = windows("old", "claude", EXPIRED, f"{standin.url}/a/ops")
    assert [o.used_percent for o in expired] == [None, None]
    assert {o.source for o in expired} == {"claude-oauth-usage:unavailable:http-401"}
    api_key = windows("key", "claude", GOOD, standin.url)
    assert [o.used_percent for o in api_key] == [None, None]
    assert {o.source for o in api_key} == {"no-window:unavailable:api-key-no-subscription-window"}
