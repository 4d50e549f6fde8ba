"""An episode on a registered account, with the real CLI, against the stand-in provider
started as an external server: only the URL differs from the real account path.

A recognisable credential is planted; the stand-in accepts only it (so a billed request
proves it reached the provider), and nothing the run wrote or printed contains it.
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import time
from pathlib import Path

import pytest

from tests.real_cli_bins import claude_binary, codex_binary
from tests.standin_support import (
    files_holding,
    ledger_requests,
    local_accounts_env,
    running_standin,
)
from tests.support import pairlab_argv

pytestmark = [pytest.mark.realcli]


def _pairlab(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        pairlab_argv(*args), env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


@pytest.mark.parametrize(
    ("client", "prefix", "suffix", "secret_name"),
    [
        ("claude", "sk-ant-oat01-", "", "CLAUDE_CODE_OAUTH_TOKEN"),
        ("claude", "sk-ant-api03-", "", "ANTHROPIC_API_KEY"),
        ("codex", "sk-proj-", "/v1", "PAIRLAB_EMULATOR_KEY"),
    ],
)
def test_planted_credential_reaches_the_provider_and_nothing_written(
    tmp_path: Path, client: str, prefix: str, suffix: str, secret_name: str
) -> None:
    (claude_binary if client == "claude" else codex_binary)()
    planted = f"{prefix}PLANTED{secrets.token_hex(12)}"
    env = local_accounts_env(tmp_path, PLANTED_CREDENTIAL=planted)
    with running_standin(tmp_path / "standin", planted) as standin:
        base = standin.register("fix-median")
        added = _pairlab(
            env, "account", "add", "own", "--client", client,
            "--from-env", "PLANTED_CREDENTIAL", "--provider-url", base + suffix,
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        out = tmp_path / "episode"
        ran = _pairlab(
            env, "episode", "run", "--profile", client, "--task", "fix-median",
            "--arm", "baseline", "--account", "own", "--out", str(out), "--json",
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        result = json.loads(ran.stdout)
        token = base.rsplit("/", 1)[1]
        requests = ledger_requests(standin.ledgers / f"{token}.jsonl")

    # the credential reached the provider in the form the CLI reads: accepted and billed
    assert result["account"] == "own" and result["secret_names"] == [secret_name]
    assert result["final_answer"] and result["exit_code"] == 0
    assert requests and all(r["status"] == 200 for r in requests)
    assert not (standin.ledgers / "unrouted.jsonl").exists()  # nothing refused
    # and it is nowhere in what the run wrote (records, collected HOME, transcripts) or printed
    assert files_holding(out, planted) == []
    assert files_holding(out, planted[len(prefix) :]) == []
    assert planted not in ran.stdout + ran.stderr + added.stdout + added.stderr


def test_a_credential_in_a_parameter_and_an_unknown_account_are_refused(tmp_path: Path) -> None:
    env = local_accounts_env(tmp_path)
    pasted = "sk-ant-api03-PASTED" + secrets.token_hex(12)
    refused = _pairlab(
        env, "episode", "run", "--profile", "claude", "--task", "fix-median",
        "--arm", "baseline", "--model", pasted, "--json",
    )  # fmt: skip
    assert refused.returncode == 2
    error = json.loads(refused.stdout)
    assert error["reason_code"] == "credential-in-parameter" and "'model'" in error["error"]
    assert pasted not in refused.stdout + refused.stderr

    unknown = _pairlab(
        env, "episode", "run", "--profile", "claude", "--task", "fix-median",
        "--arm", "baseline", "--account", "nobody", "--json",
    )  # fmt: skip
    assert unknown.returncode == 2
    assert json.loads(unknown.stdout)["reason_code"] == "account-unknown"


def _chatgpt_login(tmp_path: Path, *, stale: bool) -> tuple[Path, dict[str, str]]:
    """A Codex auth.json as `codex login` writes it, with planted tokens. ``stale``: an
    access token without ``exp`` and a ``last_refresh`` years ago, so that Codex tries to
    refresh it before its first request (it must not wait on auth.openai.com)."""

    def part(doc: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).rstrip(b"=").decode()

    account_id = f"acct-{secrets.token_hex(6)}"
    claims = {"email": "op@example.com", "exp": int(time.time()) + 86_400,
              "https://api.openai.com/auth": {"chatgpt_plan_type": "plus",
                                              "chatgpt_account_id": account_id}}  # fmt: skip
    tokens = {
        "id_token": ".".join([part({"alg": "none"}), part(claims), "c2ln"]),
        "access_token": f"PLANTEDACCESS{secrets.token_hex(12)}",
        "refresh_token": f"PLANTEDREFRESH{secrets.token_hex(12)}",
        "account_id": account_id,
    }
    last = "2020-01-01T00:00:00Z" if stale else time.strftime("%Y-%m-%dT%H:%M:%SZ")
    path = tmp_path / f"auth-{secrets.token_hex(3)}.json"
    path.write_text(json.dumps({"OPENAI_API_KEY": None, "tokens": tokens, "last_refresh": last}))
    return path, tokens


def _kept_container_inspect(run_id: str) -> str:
    """``docker inspect`` of the run's kept episode container; then removes what was kept."""
    from tests.integration.backend_fixtures import docker_client_or_skip

    client = docker_client_or_skip()
    label = {"label": f"pairlab.run_id={run_id}"}
    try:
        containers = client.containers.list(all=True, filters=label)
        assert containers, f"no kept container of {run_id}"
        return json.dumps([c.attrs for c in containers])
    finally:
        for container in client.containers.list(all=True, filters=label):
            container.remove(force=True)
        for volume in client.volumes.list(filters=label):
            volume.remove(force=True)
        client.close()


@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_a_chatgpt_login_reaches_the_chatgpt_backend_and_nothing_written(
    tmp_path: Path, backend: str
) -> None:
    """Codex with a ChatGPT login's auth.json: written into the episode's fresh CODEX_HOME
    (Docker: through the episode's secret mount), sent as Codex sends it (bearer access
    token and chatgpt-account-id, which the stand-in requires) to
    ``.../backend-api/codex/responses``; a stale login's refresh fails at once; nothing
    the episode wrote, printed or (Docker) configured holds a token. Locally, a login the
    provider refuses ends in ``credential-rejected``."""
    codex_binary()
    login, tokens = _chatgpt_login(tmp_path, stale=True)
    wrong, _ = _chatgpt_login(tmp_path, stale=False)
    env = local_accounts_env(tmp_path)
    with running_standin(tmp_path / "standin", f"file:{login}") as standin:
        base = standin.register("fix-median")
        for name, path in (("plus", login), ("other", wrong)):
            added = _pairlab(
                env, "account", "add", name, "--client", "codex", "--from-file", str(path),
                "--provider-url", f"{base}/backend-api/codex",
            )  # fmt: skip
            assert added.returncode == 0, added.stderr
        out = tmp_path / "episode"
        ran = _pairlab(
            env, "episode", "run", "--profile", "codex", "--task", "fix-median",
            "--arm", "baseline", "--account", "plus", "--out", str(out), "--json",
            "--backend", backend, *(["--keep"] if backend == "docker" else []),
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        result = json.loads(ran.stdout)
        refused = ["--arm", "baseline", "--account", "other", "--json"]
        rejected = (
            _pairlab(env, "episode", "run", "--profile", "codex", "--task", "fix-median", *refused)
            if backend == "local"
            else None
        )
        # `account check --probe` asks the login's usage endpoint, as Codex would
        probed = [_pairlab(env, "account", "check", n, "--probe") for n in ("plus", "other")]
        token = base.rsplit("/", 1)[1]
        requests = ledger_requests(standin.ledgers / f"{token}.jsonl")
    inspected = _kept_container_inspect(result["run_id"]) if backend == "docker" else ""
    assert [p.returncode for p in probed] == [0, 2], [p.stdout + p.stderr for p in probed]

    assert result["secret_names"] == ["$HOME/.codex/auth.json"]
    assert result["final_answer"] and result["exit_code"] == 0 and result["passed"]
    model_calls = [r for r in requests if str(r["path"]).endswith("/backend-api/codex/responses")]
    assert model_calls and all(r["status"] == 200 for r in model_calls)
    assert not (out / "collected" / "home" / ".codex" / "auth.json").exists()
    for secret in (tokens["access_token"], tokens["refresh_token"]):
        assert files_holding(out, secret) == []
        assert secret not in ran.stdout + ran.stderr + inspected
    if rejected is not None:
        assert rejected.returncode == 2, rejected.stdout + rejected.stderr
        assert json.loads(rejected.stdout)["reason_code"] == "credential-rejected"


@pytest.mark.docker
def test_a_claude_account_on_docker_reaches_its_provider_and_nothing_written(
    tmp_path: Path,
) -> None:
    """Claude Code on Docker with a subscription token: the container reaches the stand-in
    on this host through the run network alone, the token through the episode's secret
    mount; the kept container's configuration (docker inspect) and everything written
    hold no trace of it."""
    claude_binary()
    planted = f"sk-ant-oat01-PLANTED{secrets.token_hex(12)}"
    env = local_accounts_env(tmp_path, PLANTED_CREDENTIAL=planted)
    with running_standin(tmp_path / "standin", planted) as standin:
        base = standin.register("fix-median")
        added = _pairlab(
            env, "account", "add", "own", "--client", "claude",
            "--from-env", "PLANTED_CREDENTIAL", "--provider-url", base,
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        out = tmp_path / "episode"
        ran = _pairlab(
            env, "episode", "run", "--profile", "claude", "--task", "fix-median",
            "--arm", "baseline", "--account", "own", "--backend", "docker", "--keep",
            "--out", str(out), "--json",
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        result = json.loads(ran.stdout)
        requests = ledger_requests(standin.ledgers / f"{base.rsplit('/', 1)[1]}.jsonl")
    inspected = _kept_container_inspect(result["run_id"])

    assert result["backend"] == "docker" and result["secret_names"] == ["CLAUDE_CODE_OAUTH_TOKEN"]
    assert result["final_answer"] and result["exit_code"] == 0 and result["passed"]
    assert requests and all(r["status"] == 200 for r in requests)
    assert '"/run/pairlab-secrets"' in inspected  # the secret mount, not the value
    for text in (inspected, ran.stdout + ran.stderr):
        assert planted not in text and planted[len("sk-ant-oat01-") :] not in text
    assert files_holding(out, planted) == []
