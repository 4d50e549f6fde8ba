"""An account whose provider is behind TLS with a private CA (a corporate gateway), with
the real CLIs: the stand-in provider serves HTTPS only, with a certificate for a *name*
of this machine signed by a CA made here; the account declares that CA (``--ca-file``).

On Docker the container resolves that name to the run network's relay, which copies the
bytes to the stand-in: TLS runs end to end between the CLI and the stand-in, and the
certificate is checked against the name. A request in the stand-in's ledger therefore
came over TLS (it serves nothing else: a plain-HTTP request to its port is no request).
Without the CA, or with a URL the certificate does not name, the run is refused before
anything runs (``provider-tls-untrusted``), not taken for a rejected credential.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.integration.test_account_episode import _kept_container_inspect
from tests.real_cli_bins import claude_binary, codex_binary
from tests.standin_support import ledger_requests, local_accounts_env, running_standin
from tests.support import pairlab_argv
from tests.tls_support import machine_name, make_test_ca

pytestmark = [pytest.mark.realcli]

PREFIX = {"claude": "sk-ant-api03-", "codex": "sk-proj-"}


def _pairlab(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        pairlab_argv(*args), env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


def _episode(client: str, account: str, *extra: str) -> list[str]:
    return [
        "episode", "run", "--profile", client, "--task", "fix-median", "--arm", "baseline",
        "--account", account, "--json", *extra,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("client", "backend"),
    [
        pytest.param("claude", "docker", marks=pytest.mark.docker),
        pytest.param("codex", "docker", marks=pytest.mark.docker),
        ("claude", "local"),
        ("codex", "local"),
    ],
)
def test_a_cli_reaches_a_tls_provider_with_a_private_ca(
    tmp_path: Path, client: str, backend: str
) -> None:
    (claude_binary if client == "claude" else codex_binary)()
    tls = make_test_ca(tmp_path / "pki", machine_name())
    planted = f"{PREFIX[client]}PLANTED{secrets.token_hex(12)}"
    env = local_accounts_env(tmp_path, PLANTED_CREDENTIAL=planted)
    with running_standin(tmp_path / "standin", planted, tls=tls) as standin:
        assert standin.url.startswith(f"https://{tls.name}:")
        base = standin.register("fix-median")
        suffix = "/v1" if client == "codex" else ""
        added = _pairlab(
            env, "account", "add", "gw", "--client", client, "--from-env", "PLANTED_CREDENTIAL",
            "--provider-url", base + suffix, "--ca-file", str(tls.ca_pem), "--json",
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        assert json.loads(added.stdout)["account"]["caBundle"]["certificates"] == 1
        keep = ["--keep"] if backend == "docker" else []
        out = tmp_path / "episode"
        ran = _pairlab(env, *_episode(client, "gw", "--backend", backend, "--out", str(out), *keep))
        assert ran.returncode == 0, ran.stdout + ran.stderr
        result = json.loads(ran.stdout)
        # the port speaks TLS only: plain HTTP there is refused, and is no ledger row
        with pytest.raises(httpx.HTTPError):
            httpx.get(base.replace("https://", "http://") + "/v1/models", timeout=10)
        requests = ledger_requests(standin.ledgers / f"{base.rsplit('/', 1)[1]}.jsonl")
    inspected = _kept_container_inspect(result["run_id"]) if backend == "docker" else ""

    assert result["backend"] == backend and result["account"] == "gw"
    assert result["final_answer"] and result["exit_code"] == 0 and result["passed"]
    assert requests and all(r["status"] == 200 for r in requests)
    variable = "NODE_EXTRA_CA_CERTS" if client == "claude" else "CODEX_CA_CERTIFICATE"
    if backend == "docker":
        # the CA reached the container as a read-only file mount, named by the CLI's variable
        config = json.loads(inspected)[0]
        assert f"{variable}=/run/pairlab-provider-ca.pem" in config["Config"]["Env"]
        mount = next(
            m for m in config["Mounts"] if m["Destination"] == "/run/pairlab-provider-ca.pem"
        )
        assert mount["RW"] is False
        # the container reached the stand-in by its name, through the run network's relay
        assert f"{tls.name}:" in json.dumps(config["HostConfig"].get("ExtraHosts"))


def test_an_untrusted_provider_certificate_is_refused_with_its_reason(tmp_path: Path) -> None:
    """No CA declared, another CA declared, or the right CA with a URL the certificate does
    not name (its address): ``provider-tls-untrusted`` (exit 2) before anything runs, for
    the episode and for ``account check --probe``; the stand-in saw no request."""
    claude_binary()
    tls = make_test_ca(tmp_path / "pki", machine_name())
    other = make_test_ca(tmp_path / "other", machine_name(), label="another CA")
    planted = f"sk-ant-api03-PLANTED{secrets.token_hex(12)}"
    env = local_accounts_env(tmp_path, PLANTED_CREDENTIAL=planted)
    with running_standin(tmp_path / "standin", planted, tls=tls) as standin:
        base = standin.register("fix-median")
        by_address = base.replace(f"https://{tls.name}:", "https://127.0.0.1:")
        cases = {
            "none": [base],
            "other-ca": [base, "--ca-file", str(other.ca_pem)],
            "by-address": [by_address, "--ca-file", str(tls.ca_pem)],
        }
        answers = {}
        for name, (url, *ca) in cases.items():
            added = _pairlab(
                env, "account", "add", name, "--client", "claude",
                "--from-env", "PLANTED_CREDENTIAL", "--provider-url", url, *ca,
            )  # fmt: skip
            assert added.returncode == 0, added.stderr
            ran = _pairlab(env, *_episode("claude", name, "--out", str(tmp_path / name)))
            probed = _pairlab(env, "account", "check", name, "--probe", "--json")
            answers[name] = (ran, probed)
        ledger = standin.ledgers / f"{base.rsplit('/', 1)[1]}.jsonl"
        requests = ledger_requests(ledger) if ledger.exists() else []

    for name, (ran, probed) in answers.items():
        for proc in (ran, probed):
            assert proc.returncode == 2, (name, proc.stdout + proc.stderr)
            error = json.loads(proc.stdout)
            assert error["reason_code"] == "provider-tls-untrusted", (name, error)
            assert ("--provider-url" if name == "by-address" else "--ca-file") in error["error"]
            assert planted not in proc.stdout + proc.stderr
    assert "IP address mismatch" in json.loads(answers["by-address"][0].stdout)["error"]
    assert "unable to get local issuer" in json.loads(answers["none"][0].stdout)["error"]
    assert requests == []
    assert not (tmp_path / "none" / "manifest.json").exists()


def test_subscription_windows_are_read_through_the_private_ca(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The account's quota probe (Claude's OAuth usage endpoint) trusts the account's CA
    too: with it the windows are read over TLS; with another CA they are unknown
    (``tls-untrusted``), never 0."""
    from pairlab.adapters.accounts.quota_wiring import account_quota_source
    from pairlab.adapters.accounts.selection import load_account
    from pairlab.adapters.profiles import load_named_profile
    from pairlab.adapters.quota.account import snapshot_quota

    tls = make_test_ca(tmp_path / "pki", machine_name())
    other = make_test_ca(tmp_path / "other", machine_name(), label="another CA")
    token = f"sk-ant-oat01-PLANTED{secrets.token_hex(12)}"
    env = local_accounts_env(tmp_path, PLANTED_CREDENTIAL=token)
    for name, value in env.items():
        if name.startswith("PAIRLAB_ACCOUNT"):
            monkeypatch.setenv(name, value)
    for name in [n for n in os.environ if n.startswith("PREFECT_API")]:
        monkeypatch.delenv(name)
    with running_standin(tmp_path / "standin", token, tls=tls) as standin:
        looks = {}
        for name, ca in (("gw", tls), ("wrong", other)):
            added = _pairlab(
                env, "account", "add", name, "--client", "claude", "--from-env",
                "PLANTED_CREDENTIAL", "--provider-url", f"{standin.url}/a/ops",
                "--ca-file", str(ca.ca_pem),
            )  # fmt: skip
            assert added.returncode == 0, added.stderr
            account, _ = load_account(name)
            profile = load_named_profile("claude")
            looks[name] = snapshot_quota(
                profile.model_copy(update={"quota": account_quota_source(account)}), None
            )

    assert {o.window for o in looks["gw"]} == {"five-hour", "seven-day"}
    assert all(o.used_percent is not None for o in looks["gw"])
    assert all(o.source == "claude-oauth-usage" for o in looks["gw"])
    assert [o.used_percent for o in looks["wrong"]] == [None, None]
    assert {o.source for o in looks["wrong"]} == {"claude-oauth-usage:unavailable:tls-untrusted"}
