"""``pairlab eval --account`` with the real Claude Code against the stand-in provider,
started as an external server: a planted credential reaches the provider (the stand-in
accepts nothing else) and is in nothing the run wrote or published, transcripts included;
the account's subscription window, read from the provider's usage endpoint, stops the run
at its percent ceiling and a resume with a raised one completes it."""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
from pathlib import Path

import pytest

from tests.real_cli_bins import claude_binary
from tests.standin_support import (
    files_holding,
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


# the stand-in account's five-hour window, in weighted tokens: one Claude Code episode of
# fix-median moves it by about 10 points (measured: 22 % for the first pair)
WINDOW_LIMIT = 400_000.0
CEILING_PERCENT = 25  # the first pair (~22 points + the estimate of the next) crosses it


def test_eval_on_an_account_stops_at_its_window_ceiling_and_publishes_no_credential(
    tmp_path: Path,
) -> None:
    """A subscription-token account on the stand-in, whose five-hour window its episodes
    advance: the run reads the window through the provider's usage endpoint before each
    pair, stops at a ceiling of 25 % after the probe pair (budget-exhausted, exit 4), and a
    resume with 100 % runs the rest, each episode once. The planted credential reaches the
    provider and is in nothing the run wrote or published, transcripts included."""
    claude_binary()
    planted = f"sk-ant-oat01-PLANTED{secrets.token_hex(12)}"
    env = local_accounts_env(tmp_path, PLANTED_CREDENTIAL=planted)
    store, work = tmp_path / "store", tmp_path / "work"
    run_id = "windowed"

    def evaluate(percent: int) -> subprocess.CompletedProcess[str]:
        return _pairlab(
            env, "eval", "--account", "own", "--task", "fix-median", "--repetitions", "2",
            "--arms", "baseline,optimizer", "--store", str(store), "--work-dir", str(work),
            "--include-transcript", "--budget-window-percent", str(percent),
            "--run-id", run_id, "--json",
        )  # fmt: skip

    with running_standin(tmp_path / "standin", "env:PLANTED_CREDENTIAL", env=env) as standin:
        base = standin.register("fix-median", five_hour_limit=WINDOW_LIMIT)
        added = _pairlab(
            env, "account", "add", "own", "--client", "claude",
            "--from-env", "PLANTED_CREDENTIAL", "--provider-url", base,
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        # certified first (against certify's own stand-in): the run records and reports it
        certified = _pairlab(env, "certify", "--account", "own", "--json")
        assert certified.returncode == 0, certified.stdout[-2000:]
        assert json.loads(certified.stdout)["accountCertification"]["passed"] is True
        stopped = evaluate(CEILING_PERCENT)
        run_dir = work / "runs" / run_id
        first = {p.parent.name: p.read_bytes() for p in run_dir.glob("episodes/*/record.json")}
        ran = evaluate(100)
        rows = [json.loads(line) for line in (standin.ledgers / f"{base.rsplit('/', 1)[1]}.jsonl")
                .read_text().splitlines() if line.strip()]  # fmt: skip

    # stopped mid-run at the window ceiling, after the probe pair
    assert stopped.returncode == 4, stopped.stderr
    halt = json.loads(stopped.stdout.strip().splitlines()[-1])
    assert halt["reason_code"] == "budget-exhausted"
    assert (
        f"of {CEILING_PERCENT}% of the subscription window used, 2 of 4 episodes" in halt["error"]
    )
    window = halt["budget"]["window"]
    five = next(w for w in window["windows"] if w["window"] == "five-hour")
    assert five["start_percent"] == 0 and five["last_percent"] >= 2  # the stand-in advanced it
    assert len(first) == 2
    # the records' quota brackets are the provider's usage endpoint, read with the account
    record = json.loads(next(iter(first.values())))
    before = {o["window"]: o for o in record["quotaBefore"]}
    after = {o["window"]: o for o in record["quotaAfter"]}
    assert before["five-hour"]["source"] == "claude-oauth-usage"
    assert after["five-hour"]["used_percent"] > before["five-hour"]["used_percent"]

    # the resume with a raised ceiling runs the rest: every episode once, the first untouched
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["episodes"] == 4 and result["failed"] == 0
    requests = [r for r in rows if r.get("kind") == "request"]  # as ledger_requests reads them
    # every model call went to the account's provider with the planted credential, accepted
    assert len(requests) >= 4 and all(r["status"] == 200 for r in requests)
    assert not (standin.ledgers / "unrouted.jsonl").exists()
    published = store / "runs" / run_id
    records = [json.loads(line) for line in (published / "episodes.jsonl").read_text().splitlines()]
    ids = [r["episodeId"] for r in records]
    assert len(ids) == 4 and len(set(ids)) == 4 and {r["client"] for r in records} == {"claude"}
    assert {k: (run_dir / "episodes" / k / "record.json").read_bytes() for k in first} == first
    assert list(published.glob("episodes/*/collected/**/*.jsonl"))  # transcripts were published
    settings = json.loads((published / "run.json").read_text())
    assert settings["account"]["name"] == "own"
    assert settings["account"]["kind"] == "subscription-token"
    assert settings["account"]["certification"]["state"] == "certified"
    assert settings["account"]["certification"]["certification"]["against"] == "stand-in"
    budget = settings["budget"]
    assert budget["stopped_at_ceiling"] is False and budget["ceiling_tokens"] is None
    assert budget["window"]["ceiling_percent"] == 100
    report = (published / "report.md").read_text()
    assert "· account own (claude subscription-token at http://127.0.0.1:" in report
    assert "budget ceiling 100% of the subscription window" in report
    assert "usage endpoint; certified live-local against the stand-in 20" in report
    # the run's use since it started, read after its last pair: every episode's bracket in it
    last = max(after["five-hour"]["used_percent"] for after in (
        {o["window"]: o for o in r["quotaAfter"]} for r in records))  # fmt: skip
    assert budget["window"]["windows"][0]["last_percent"] >= last
    # published, staged, printed: the credential nowhere, whole or without its prefix
    for where in (store, work):
        assert files_holding(where, planted) == []
        assert files_holding(where, planted.removeprefix("sk-ant-oat01-")) == []
    for proc in (certified, stopped, ran):
        assert planted not in proc.stdout + proc.stderr


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


def test_an_unreachable_provider_stops_the_run_naming_it(tmp_path: Path) -> None:
    """An account whose provider URL is a closed port (the real Codex, local backend; the
    canary's Docker case is in test_account_canary.py): the first episode's Codex could not
    send its request, so the run stops at once, exit 3 ``provider-unreachable`` naming the
    provider's host and port -- not exit 4 "budget-exhausted: spend unknown" after a probe
    pair that reached nothing. Nothing is recorded or published."""
    from tests.real_cli_bins import codex_binary

    codex_binary()
    with socket.socket() as closed:  # a free port, closed again: nothing listens on it
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    key = f"sk-proj-KEY{secrets.token_hex(12)}"
    env = local_accounts_env(tmp_path, KEY=key)
    added = _pairlab(
        env, "account", "add", "nowhere", "--client", "codex", "--from-env", "KEY",
        "--provider-url", f"http://127.0.0.1:{port}/v1",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    store, work = tmp_path / "store", tmp_path / "work"
    proc = subprocess.run(  # as the 401 path's: Prefect logs the stopping task's traceback
        pairlab_argv(
            "eval", "--account", "nowhere", "--task", "fix-median", "--repetitions", "2",
            "--arms", "baseline,optimizer", "--budget-tokens", "1", "--store", str(store),
            "--work-dir", str(work), "--json",
        ),
        env=env, capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip

    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    error = json.loads(proc.stdout.strip().splitlines()[-1])
    assert error["reason_code"] == "provider-unreachable"
    assert f"no request reached the provider at 127.0.0.1:{port}" in error["error"]
    assert "error sending request" in error["error"]  # Codex's own words
    assert not store.exists()
    assert list(work.rglob("record.json")) == []
    assert key not in proc.stdout + proc.stderr


def test_a_window_ceiling_on_an_api_key_and_concurrent_subscription_pairs_are_refused(
    tmp_path: Path,
) -> None:
    """Before anything runs: a percent-of-window ceiling on an API-key account has nothing
    to hold against (no-subscription-window, exit 2); a subscription account runs its pairs
    one at a time (concurrency 2 refused)."""
    env = local_accounts_env(
        tmp_path,
        KEY=f"sk-ant-api03-K{secrets.token_hex(8)}",
        TOKEN=f"sk-ant-oat01-T{secrets.token_hex(8)}",
    )
    for name, var in (("key", "KEY"), ("sub", "TOKEN")):
        added = _pairlab(env, "account", "add", name, "--client", "claude", "--from-env", var)
        assert added.returncode == 0, added.stderr
    store = tmp_path / "store"

    def refused(*args: str) -> dict[str, object]:
        proc = _pairlab(env, "eval", "--task", "fix-median", "--store", str(store), "--json", *args)
        assert proc.returncode == 2, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]

    no_window = refused("--account", "key", "--budget-window-percent", "10")
    assert no_window["reason_code"] == "no-subscription-window"
    assert "api-key: it has no subscription window" in str(no_window["error"])
    overlapping = refused("--account", "sub", "--budget-tokens", "1000", "--concurrency", "2")
    assert overlapping["reason_code"] == "invalid-input"
    assert "pairs run one at a time" in str(overlapping["error"])
    assert not store.exists()
