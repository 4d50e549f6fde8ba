"""``pairlab certify --account NAME``: the isolation probe on the account path, with the
real CLIs -- a Codex ChatGPT login on Docker (auth.json through the episode's secret
mount) and a Claude subscription token locally. Every arm sees what it should, the
credential reaches the CLI only in its own form (the run's emulator, as the stand-in,
accepts nothing else), and it is in nothing the probe wrote nor in the report. The run is
recorded on the account's record (its certification: level, against the stand-in, the
CLI's version, the report's sha256; never the credential), which ``account list`` shows,
stale once the account's provider URL changes; a failed run is recorded as failed."""

from __future__ import annotations

import json
import re
import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pairlab.core.account_certification import report_sha256
from tests.integration.test_account_episode import _chatgpt_login
from tests.real_cli_bins import claude_binary, codex_binary
from tests.standin_support import local_accounts_env
from tests.support import REPO_ROOT, pairlab_argv

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
    _assert_recorded(env, report, client, backend, needles)
    # re-registered at another provider URL: the certification stays, and goes stale
    moved = _pairlab(
        env, "account", "add", "own", "--client", client, *source, "--replace",
        "--provider-url", "https://gateway.example/provider",
    )  # fmt: skip
    assert moved.returncode == 0, moved.stderr
    listed = _listed(env)["own"]["certification"]
    assert listed["state"] == "stale"
    assert [r["code"] for r in listed["stale"]] == ["provider-url-changed"]
    assert listed["certification"] == report["accountCertification"]


def _listed(env: dict[str, str]) -> dict[str, Any]:
    listed = _pairlab(env, "account", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return {a["name"]: a for a in json.loads(listed.stdout)["accounts"]}


def _assert_recorded(
    env: dict[str, str], report: dict[str, Any], client: str, backend: str, needles: list[str]
) -> None:
    """The passing run on the account's record: what it proved, against what, with which
    CLI, and the report's hash; in the local store beside the credential, never in it."""
    cert = report.pop("accountCertification")
    (entry,) = report["profiles"]
    assert cert["passed"] is True and cert["failed_checks"] == []
    assert cert["level"] == entry["level"] == "live-local" and cert["against"] == "stand-in"
    assert cert["client"] == client and cert["profile"] == client and cert["backend"] == backend
    assert cert["cli_version"] == entry["version"] and cert["cli_version"]
    assert cert["report_sha256"] == report_sha256(report)  # the report as printed
    assert cert["intervention"].startswith("reference ")
    listed = _listed(env)["own"]
    assert listed["certification"]["state"] == "certified", listed["certification"]
    assert listed["certification"]["certification"] == cert
    stored = json.loads(Path(env["PAIRLAB_ACCOUNTS_FILE"]).read_text())["accounts"]["own"]
    assert stored["account"]["certification"] == cert
    for needle in needles:  # the credential is beside the record, never in it
        assert needle not in json.dumps(stored["account"])
        assert needle in stored["credential"]
    report["accountCertification"] = cert


def test_a_failed_certify_on_an_account_is_recorded_as_failed(tmp_path: Path) -> None:
    """A profile pinning another CLI version fails its ``cli`` check before any episode:
    the run is recorded as failed (naming the check), and ``account list`` says so."""
    claude_binary()
    planted = f"sk-ant-oat01-PLANTED{secrets.token_hex(12)}"
    env = local_accounts_env(tmp_path, PLANTED_CREDENTIAL=planted)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    text = (REPO_ROOT / "runner_profiles" / "claude.yaml").read_text()
    pinned = re.sub(r'^version: ".*"$', 'version: "0.0.1"', text, count=1, flags=re.M)
    assert 'version: "0.0.1"' in pinned
    (profiles / "claude.yaml").write_text(pinned)
    added = _pairlab(env, "account", "add", "own", "--client", "claude", "--from-env",
                     "PLANTED_CREDENTIAL")  # fmt: skip
    assert added.returncode == 0, added.stderr
    ran = _pairlab(env, "certify", "--account", "own", "--profiles-dir", str(profiles), "--json")
    assert ran.returncode == 1, ran.stderr
    report = json.loads(ran.stdout)
    cert = report.pop("accountCertification")
    assert cert["passed"] is False and "cli" in cert["failed_checks"]
    assert cert["report_sha256"] == report_sha256(report)
    listed = _listed(env)["own"]["certification"]
    assert listed["state"] == "failed" and listed["certification"] == cert
    assert "certify FAILED" in listed["line"] and "failed checks: cli" in listed["line"]
    text_list = _pairlab(env, "account", "list")
    assert "certify FAILED" in text_list.stdout
    assert planted not in ran.stdout + ran.stderr + text_list.stdout


def test_certify_on_an_unknown_account_names_the_known_ones(tmp_path: Path) -> None:
    ran = _pairlab(local_accounts_env(tmp_path), "certify", "--account", "nobody", "--json")
    assert ran.returncode == 2
    assert json.loads(ran.stdout)["reason_code"] == "account-unknown"
