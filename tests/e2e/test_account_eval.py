"""``pairlab eval --account`` with the real Claude Code against the stand-in provider,
started as an external server: a planted credential reaches the provider (the stand-in
accepts nothing else) and is in nothing the run wrote or published, transcripts included."""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path

import pytest

from tests.real_cli_bins import claude_binary
from tests.standin_support import (
    files_holding,
    ledger_requests,
    local_accounts_env,
    running_standin,
)
from tests.support import pairlab_argv

pytestmark = [pytest.mark.realcli, pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1500)]


def _pairlab(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        pairlab_argv(*args), env=env, capture_output=True, text=True, timeout=1200, check=False
    )
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


def test_eval_on_an_account_publishes_nothing_of_its_credential(tmp_path: Path) -> None:
    claude_binary()
    planted = f"sk-ant-oat01-PLANTED{secrets.token_hex(12)}"
    env = local_accounts_env(tmp_path, PLANTED_CREDENTIAL=planted)
    store, work = tmp_path / "store", tmp_path / "work"
    with running_standin(tmp_path / "standin", "env:PLANTED_CREDENTIAL", env=env) as standin:
        base = standin.register("fix-median")
        added = _pairlab(
            env, "account", "add", "own", "--client", "claude",
            "--from-env", "PLANTED_CREDENTIAL", "--provider-url", base,
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        ran = _pairlab(
            env, "eval", "--account", "own", "--task", "fix-median", "--repetitions", "2",
            "--arms", "baseline,optimizer", "--store", str(store), "--work-dir", str(work),
            "--include-transcript", "--json",
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        requests = ledger_requests(standin.ledgers / f"{base.rsplit('/', 1)[1]}.jsonl")

    result = json.loads(ran.stdout)
    assert result["episodes"] == 4 and result["failed"] == 0
    # every model call went to the account's provider with the planted credential, accepted
    assert len(requests) >= 4 and all(r["status"] == 200 for r in requests)
    assert not (standin.ledgers / "unrouted.jsonl").exists()
    run_dir = store / "runs" / result["run_id"]
    records = [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]
    assert {r["client"] for r in records} == {"claude"}
    assert list(run_dir.glob("episodes/*/collected/**/*.jsonl"))  # transcripts were published
    settings = json.loads((run_dir / "run.json").read_text())
    assert settings["account"]["name"] == "own"
    assert settings["account"]["kind"] == "subscription-token"
    assert "· account own (claude subscription-token at http://127.0.0.1:" in (
        run_dir / "report.md"
    ).read_text()
    # published, staged, printed: the credential nowhere, whole or without its prefix
    for where in (store, work):
        assert files_holding(where, planted) == []
        assert files_holding(where, planted.removeprefix("sk-ant-oat01-")) == []
    assert planted not in ran.stdout + ran.stderr


def test_eval_refuses_a_credential_in_a_parameter(tmp_path: Path) -> None:
    pasted = "sk-proj-PASTED" + secrets.token_hex(12)
    refused = _pairlab(
        local_accounts_env(tmp_path), "eval", "--profile", "sim", "--model", pasted,
        "--store", str(tmp_path / "store"), "--json",
    )  # fmt: skip
    assert refused.returncode == 2
    error = json.loads(refused.stdout)
    assert error["reason_code"] == "credential-in-parameter" and "'model'" in error["error"]
    assert pasted not in refused.stdout + refused.stderr
    assert not (tmp_path / "store").exists()


def test_a_rejected_credential_stops_the_run_and_publishes_nothing(tmp_path: Path) -> None:
    """The 401 path with the real Codex (Claude Code retries a 401 for minutes first): the
    first episode shows credential-rejected, the run stops, no store is written."""
    from tests.real_cli_bins import codex_binary

    codex_binary()
    accepted = f"sk-proj-ACCEPTED{secrets.token_hex(12)}"
    wrong = f"sk-proj-WRONG{secrets.token_hex(12)}"
    env = local_accounts_env(tmp_path, ACCEPTED=accepted, WRONG_CREDENTIAL=wrong)
    store = tmp_path / "store"
    with running_standin(tmp_path / "standin", "env:ACCEPTED", env=env) as standin:
        base = standin.register("fix-median")
        added = _pairlab(
            env, "account", "add", "wrong", "--client", "codex",
            "--from-env", "WRONG_CREDENTIAL", "--provider-url", base + "/v1",
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        proc = subprocess.run(
            pairlab_argv(
                "eval", "--account", "wrong", "--task", "fix-median", "--repetitions", "2",
                "--arms", "baseline,optimizer", "--store", str(store),
                "--work-dir", str(tmp_path / "work"), "--json",
            ),
            env=env, capture_output=True, text=True, timeout=1200, check=False,
        )  # fmt: skip
        refusals = (standin.ledgers / "unrouted.jsonl").read_text().splitlines()

    assert proc.returncode == 2, proc.stderr
    error = json.loads(proc.stdout.strip().splitlines()[-1])
    assert error["reason_code"] == "credential-rejected"
    assert "Incorrect API key provided" in error["error"]  # Codex's own message, masked key
    assert wrong not in proc.stdout + proc.stderr
    assert not store.exists()  # nothing published
    # every request was refused, and no episode was recorded as evidence
    assert refusals and all('"unauthenticated"' in line for line in refusals)
    assert list((tmp_path / "work").rglob("record.json")) == []
    assert all(not p.read_text().strip() for p in (tmp_path / "work").rglob("episodes.jsonl"))
