"""An episode on a registered account, with the real CLI, against the stand-in provider
started as an external server: only the URL differs from the real account path.

A recognisable credential is planted; the stand-in accepts only it (so a billed request
proves it reached the provider), and nothing the run wrote or printed contains it.
"""

from __future__ import annotations

import json
import secrets
import subprocess
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


def test_an_account_on_docker_is_refused_for_now(tmp_path: Path) -> None:
    refused = _pairlab(
        local_accounts_env(tmp_path), "episode", "run", "--profile", "claude",
        "--task", "fix-median", "--arm", "baseline", "--account", "own",
        "--backend", "docker", "--json",
    )  # fmt: skip
    assert refused.returncode == 2
    error = json.loads(refused.stdout)
    assert error["reason_code"] == "invalid-account" and "local backend" in error["error"]
