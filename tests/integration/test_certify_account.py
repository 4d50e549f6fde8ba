"""``pairlab certify --account NAME``: the isolation probe on the account path, with the
real CLIs -- a Codex ChatGPT login on Docker (auth.json through the episode's secret
mount) and a Claude subscription token locally. Every arm sees what it should, the
credential reaches the CLI only in its own form (the run's emulator, as the stand-in,
accepts nothing else), and it is in nothing the probe wrote nor in the report."""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_account_episode import _chatgpt_login
from tests.real_cli_bins import claude_binary, codex_binary
from tests.standin_support import local_accounts_env
from tests.support import pairlab_argv

pytestmark = [pytest.mark.realcli, pytest.mark.slow, pytest.mark.timeout(900)]


def _pairlab(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        pairlab_argv(*args), env=env, capture_output=True, text=True, timeout=850, check=False
    )


@pytest.mark.parametrize(
    ("client", "backend"),
    [
        pytest.param("codex", "docker", marks=pytest.mark.docker),
        ("claude", "local"),
    ],
)
def test_certify_on_an_account_proves_isolation_and_the_credential_form(
    tmp_path: Path, client: str, backend: str
) -> None:
    if client == "codex":
        codex_binary()
        login, tokens = _chatgpt_login(tmp_path, stale=False)
        source = ["--from-file", str(login)]
        needles = [tokens["access_token"], tokens["refresh_token"]]
        env = local_accounts_env(tmp_path)
    else:
        claude_binary()
        planted = f"sk-ant-oat01-PLANTED{secrets.token_hex(12)}"
        source = ["--from-env", "PLANTED_CREDENTIAL"]
        needles = [planted]
        # a credential of the host's own must not reach the probe either
        env = local_accounts_env(
            tmp_path, PLANTED_CREDENTIAL=planted, ANTHROPIC_API_KEY="sk-ant-api03-HOSTDECOY"
        )
    added = _pairlab(env, "account", "add", "own", "--client", client, *source)
    assert added.returncode == 0, added.stderr
    ran = _pairlab(env, "certify", "--account", "own", "--backend", backend, "--json")
    report = json.loads(ran.stdout)
    (entry,) = report["profiles"]
    checks = {c["name"]: c for c in entry["checks"]}
    failed = {n: c["detail"] for n, c in checks.items() if not c["passed"]}
    assert ran.returncode == 0 and not failed, failed
    assert entry["account"]["name"] == "own" and entry["profile"] == client
    assert {"account-credential", "credential-scan", "isolation-baseline", "control"} <= set(checks)
    form = "bearer" if client == "codex" else "oauth"
    assert f"as {form} and were accepted" in checks["account-credential"]["detail"]
    # the baseline saw nothing planted; each treated arm exactly the intervention
    rows = entry["matrix"]["rows"]
    assert not any(row["seen"]["baseline"] for row in rows)
    intervention = next(r for r in rows if r["item"].startswith("intervention:"))
    assert intervention["seen"]["optimizer"] and not intervention["seen"]["baseline"]
    for needle in needles:
        assert needle not in ran.stdout + ran.stderr


def test_certify_on_an_unknown_account_names_the_known_ones(tmp_path: Path) -> None:
    ran = _pairlab(local_accounts_env(tmp_path), "certify", "--account", "nobody", "--json")
    assert ran.returncode == 2
    assert json.loads(ran.stdout)["reason_code"] == "account-unknown"
