"""A canary trial of the real Claude Code on a registered account, against the stand-in
provider started as an external server, through a real Prefect server: the account is
registered (a Prefect Secret block), the trial pauses with the account's window share in
its approval, an approval through the Prefect API runs it, its percent ceiling stops it
``budget-exhausted`` after the first AB/BA pair, a resume with a raised ceiling (approved
again) completes it with every run once; a rejected credential stops a trial at its first
run (``credential-rejected``, nothing published); the planted credential is in nothing
the trials wrote, published, logged or showed."""

from __future__ import annotations

import json
import secrets
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.canary_trial_support import (
    api,
    flow_run_of,
    resume,
    start_trial,
    wait_for_input_schema,
)
from tests.real_cli_bins import claude_binary, codex_binary
from tests.standin_support import files_holding, register_account, running_standin

pytestmark = [
    pytest.mark.realcli,
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.prefect,
    pytest.mark.timeout(1200),
]

# as tests/e2e/test_account_eval.py: one Claude Code episode of fix-median moves this
# five-hour window by about 10 points, so the first pair plus the next one's estimate
# crosses 25 %
WINDOW_LIMIT = 400_000.0
CEILING_PERCENT = 25
GO = {"approve": True, "approver": "ops-alice", "note": "", "budget_acknowledged": True}


@dataclass
class Decided:
    """An approved trial's final state, result and process output (read before the next
    attempt at the same trial id writes its log)."""

    state: tuple[str, str | None]
    result: Any
    log: str
    form: str


def _paused_run(server: Any, trial: Any, timeout_s: float = 240) -> dict[str, Any]:
    """The trial's paused flow run (a resumed trial id has earlier, ended runs too)."""
    deadline = time.monotonic() + timeout_s
    body = {"flow_runs": {"state": {"name": {"any_": ["Paused"]}}}, "limit": 50}
    while time.monotonic() < deadline:
        for run in api(server, "POST", "/flow_runs/filter", body):
            if (run.get("parameters") or {}).get("params", {}).get("run_id") == trial.trial_id:
                return dict(run)
        assert trial.process.poll() is None, trial.log.read_text(errors="replace")[-4000:]
        time.sleep(0.5)
    raise AssertionError(f"flow run {trial.trial_id} never paused")


def _approved(server: Any, tmp: Path, trial_id: str, **params: Any) -> Decided:
    """Start the trial, approve it once paused through the Prefect API, wait for its end."""
    trial = start_trial(server, tmp, trial_id, **params)
    try:
        run = _paused_run(server, trial)
        wait_for_input_schema(server, run["id"], description=True)
        details = api(server, "GET", f"/flow_runs/{run['id']}")["state"]["state_details"]
        key = details["run_input_keyset"]["description"]
        form = json.dumps(api(server, "GET", f"/flow_runs/{run['id']}/input/{key}"))
        assert resume(server, run["id"], GO)["status"] == "ACCEPT"
        trial.process.wait(timeout=900)
        log = trial.log.read_text(errors="replace")
        line = next(ln for ln in log.splitlines() if ln.startswith("CANARY-RESULT "))
        result = json.loads(line.removeprefix("CANARY-RESULT "))  # a failed run's: its error
        return Decided(trial.final_state(), result, log, form)
    finally:
        trial.stop()


def _assert_rejected(
    refused: Decided, run_dir: Path, store: Path, unrouted: list[dict[str, Any]], path: str
) -> None:
    """A trial on a credential the provider rejects: FAILED at its first run,
    credential-rejected, nothing recorded or published, the stand-in's 401 on ``path``."""
    state, message = refused.state
    assert state == "FAILED" and "rejected the credential" in (message or ""), message
    assert "credential-rejected" in refused.log
    assert not list(run_dir.glob("episodes/*/record.json"))
    assert not list(run_dir.glob("trials/evidence/*.json"))
    assert not (store / "runs" / run_dir.name).exists()
    refusals = [r for r in unrouted if r.get("kind") == "unauthenticated"]  # the stand-in's 401s
    assert any(r["path"].endswith(path) and r["status"] == 401 for r in refusals)


def _prefect_text(server: Any, trial_ids: list[str]) -> str:
    """What the server shows of the trials: their parameters, states, logs and artifacts."""
    parts = []
    for trial_id in trial_ids:
        run = flow_run_of(server, trial_id)
        assert run is not None
        flt = {"flow_run_id": {"any_": [run["id"]]}}
        parts.append(json.dumps(run))
        parts.append(json.dumps(api(server, "POST", "/logs/filter", {"logs": flt, "limit": 200})))
        parts.append(json.dumps(api(server, "POST", "/artifacts/filter", {"artifacts": flt})))
    return "\n".join(parts)


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_canary_on_an_account_approved_stopped_resumed_and_rejected(
    prefect_server: Any, tmp_path: Path, backend: str
) -> None:
    """On both backends (Docker: the token reaches the episode container through the
    backend's host env, the stand-in through the run network's relay; the windows are
    read from this process at the account's own URL)."""
    claude_binary()
    planted = f"sk-ant-oat01-PLANTED{secrets.token_hex(12)}"
    wrong = f"sk-ant-oat01-WRONG{secrets.token_hex(12)}"
    env = {**prefect_server.env, "PLANTED_CREDENTIAL": planted, "WRONG_CREDENTIAL": wrong}
    # one Prefect server serves every test of the session: a trial id per backend, so that
    # what the server shows of a trial is this test's
    trial_id, rejected_id = f"canary-acct-{backend}", f"canary-acct-{backend}-401"
    base_params = {
        "profile": "claude", "task_filter": ["fix-median"], "strata": ["cold"],
        "repetitions": 2, "treated_arm": "optimizer", "quota_interval_s": 1,
        "estimated_window_percent_per_episode": 10, "backend": backend,
    }  # fmt: skip

    with running_standin(tmp_path / "standin", "env:PLANTED_CREDENTIAL", env=env) as standin:
        base = standin.register("fix-median", five_hour_limit=WINDOW_LIMIT)
        register_account(
            env, "own", "claude", "--from-env", "PLANTED_CREDENTIAL", provider_url=base
        )
        register_account(env, "bad", "claude", "--from-env", "WRONG_CREDENTIAL", provider_url=base)
        run_dir = tmp_path / "work" / "runs" / trial_id

        # 1. approved, stopped at the percent ceiling after the first pair
        stopped = _approved(
            prefect_server, tmp_path, trial_id, account="own",
            budget_window_percent=CEILING_PERCENT, **base_params,
        )  # fmt: skip
        first = {p.parent.name: p.read_bytes() for p in run_dir.glob("episodes/*/record.json")}
        # 2. resumed with a raised ceiling, approved again: the rest
        done = _approved(
            prefect_server, tmp_path, trial_id, account="own", budget_window_percent=100,
            **base_params,
        )  # fmt: skip
        # a resume asking for another treated arm than the frozen one is refused
        changed = start_trial(
            prefect_server, tmp_path, trial_id, account="own", budget_window_percent=100,
            **{**base_params, "treated_arm": "full"},
        )  # fmt: skip
        changed.process.wait(timeout=300)
        changed_log = changed.log.read_text(errors="replace")
        # 3. a credential the provider rejects
        refused = _approved(
            prefect_server, tmp_path, rejected_id, account="bad",
            **{**base_params, "repetitions": 1},
        )  # fmt: skip
        ledger = standin.ledgers / f"{base.rsplit('/', 1)[1]}.jsonl"
        rows = [json.loads(line) for line in ledger.read_text().splitlines() if line.strip()]
        rejections = (standin.ledgers / "unrouted.jsonl").read_text().splitlines()
        unrouted = [json.loads(line) for line in rejections if line.strip()]

    # the approval form showed the account's window read before the pause, and its share
    form = stopped.form
    assert "five-hour window" in form and "read now: 0% used" in form, form
    assert "of what remains" in form and f"Ceiling: {CEILING_PERCENT}%" in form
    seen = json.loads((run_dir / "trials" / "windows-before-approval.json").read_text())
    assert {o["source"] for o in seen} == {"claude-oauth-usage"}

    assert stopped.state == (
        "CANCELLED",
        f"budget-exhausted: resume with Run Id {trial_id} and a higher ceiling",
    )
    halt = stopped.result
    assert halt["outcome"] == "budget-exhausted" and halt["episodes"] == 2
    assert "five-hour window: used" in halt["budget_stop"]
    assert len(first) == 2

    result = done.result
    assert done.state[0] == "COMPLETED", done.log[-3000:]
    assert result["outcome"] == "completed" and result["episodes"] == 4
    records = {p.parent.name: p.read_bytes() for p in run_dir.glob("episodes/*/record.json")}
    assert len(records) == 4 and {k: records[k] for k in first} == first  # each once
    parsed = [json.loads(r) for r in records.values()]
    assert {r["client"] for r in parsed} == {"claude"}
    assert sorted(r["arm"] for r in parsed) == ["baseline", "baseline", "candidate", "candidate"]
    requests = [r for r in rows if r.get("kind") == "request"]
    accepted = [r for r in requests if r["status"] == 200]
    assert len(accepted) >= 4  # the approved trial's calls went to the account's provider
    # the candidate ran the intervention's optimizer arm: the treated episodes' requests
    # offered its tools, the baseline's offered none
    manifest = json.loads((run_dir / "trials" / "manifest.json").read_text())
    assert manifest["intervention_id"] == "reference"
    assert manifest["candidate"]["revision"].endswith(":optimizer-arm")
    assert manifest["environment"]["account"] == "own"
    artifact = json.loads((run_dir / "trials" / "artifact.json").read_text())
    assert len(artifact["pairs"]) == 2
    published = tmp_path / "store" / "runs" / trial_id
    assert (published / "trials" / "verdict.json").is_file()
    assert (published / "trials" / "approval.json").is_file()
    # the approver was shown the account's certification (never certified here)
    approval = json.loads((published / "trials" / "approval.json").read_text())
    assert approval["account_certification"]["state"] == "not-certified"

    assert changed.final_state()[0] == "FAILED" and "resume-changed" in changed_log
    assert len(list(run_dir.glob("episodes/*/record.json"))) == 4

    # the 401 path: the first run says credential-rejected, the trial stops, nothing published
    _assert_rejected(
        refused,
        tmp_path / "work" / "runs" / rejected_id,
        tmp_path / "store",
        unrouted,
        "/v1/messages",
    )

    # the planted credential: in nothing written, published, printed or shown by the server
    shown = _prefect_text(prefect_server, [trial_id, rejected_id])
    for secret in (planted, wrong):
        for where in (tmp_path / "store", tmp_path / "work"):
            assert files_holding(where, secret) == []
            assert files_holding(where, secret.removeprefix("sk-ant-oat01-")) == []
        for log in (stopped.log, done.log, refused.log, changed_log):
            assert secret not in log
        assert secret.removeprefix("sk-ant-oat01-") not in shown


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_codex_canary_on_an_api_key_stops_at_its_token_ceiling(
    prefect_server: Any, tmp_path: Path, backend: str
) -> None:
    """The real Codex on an API-key account (no subscription window: the approval says the
    share cannot be read): a token ceiling of 1 lets the probe pair run alone and stops
    the trial before the second, budget-exhausted; a resume with a ceiling above the whole
    trial, approved again, completes it with each run once; a key the provider rejects
    stops a trial at its first run (credential-rejected, nothing published); neither key
    is in anything written, published, printed or shown. On both backends (Docker: the key reaches the episode
    container through its secret mount, the stand-in through the run network's relay)."""
    codex_binary()
    planted = f"sk-proj-PLANTED{secrets.token_hex(12)}"
    wrong = f"sk-proj-WRONG{secrets.token_hex(12)}"
    env = {**prefect_server.env, "PLANTED_CREDENTIAL": planted, "WRONG_CREDENTIAL": wrong}
    # one per backend: what the server shows of a trial is this test's
    trial_id, rejected_id = f"canary-codex-{backend}", f"canary-codex-{backend}-401"
    params = {
        "profile": "codex", "task_filter": ["fix-median"], "strata": ["cold"],
        "repetitions": 2, "treated_arm": "optimizer", "quota_interval_s": 1,
        "account": "key", "backend": backend,
    }  # fmt: skip
    with running_standin(tmp_path / "standin", "env:PLANTED_CREDENTIAL", env=env) as standin:
        base = standin.register("fix-median")
        added = register_account(
            env, "key", "codex", "--from-env", "PLANTED_CREDENTIAL", provider_url=f"{base}/v1"
        )
        stopped = _approved(prefect_server, tmp_path, trial_id, budget_tokens=1, **params)
        run_dir = tmp_path / "work" / "runs" / trial_id
        first = {p.parent.name: p.read_bytes() for p in run_dir.glob("episodes/*/record.json")}
        done = _approved(prefect_server, tmp_path, trial_id, budget_tokens=1_000_000_000, **params)
        token = base.rsplit("/", 1)[1]
        rows = (standin.ledgers / f"{token}.jsonl").read_text().splitlines()
        requests = [r for r in map(json.loads, filter(None, rows)) if r.get("kind") == "request"]
        refused_before = (standin.ledgers / "unrouted.jsonl").exists()
        # a key the provider rejects (401 with OpenAI's error body)
        added_wrong = register_account(
            env, "wrong-key", "codex", "--from-env", "WRONG_CREDENTIAL", provider_url=f"{base}/v1"
        )
        refused = _approved(
            prefect_server, tmp_path, rejected_id,
            **{**params, "account": "wrong-key", "repetitions": 1},
        )  # fmt: skip
        rejections = (standin.ledgers / "unrouted.jsonl").read_text().splitlines()
        unrouted = [json.loads(line) for line in rejections if line.strip()]

    assert stopped.state[0] == "CANCELLED", stopped.log[-3000:]
    assert stopped.result["outcome"] == "budget-exhausted" and stopped.result["episodes"] == 2
    assert "tokens" in stopped.result["budget_stop"]
    assert len(first) == 2
    assert done.state[0] == "COMPLETED", done.log[-3000:]
    assert done.result["episodes"] == 4
    records = {p.parent.name: p.read_bytes() for p in run_dir.glob("episodes/*/record.json")}
    assert len(records) == 4 and {k: records[k] for k in first} == first
    assert {json.loads(r)["client"] for r in records.values()} == {"codex"}
    assert requests and all(r["status"] == 200 for r in requests)
    assert not refused_before  # the good key: no request refused

    # the 401 path: the first run says credential-rejected, the trial stops, nothing published
    _assert_rejected(
        refused,
        tmp_path / "work" / "runs" / rejected_id,
        tmp_path / "store",
        unrouted,
        "/v1/responses",
    )

    shown = _prefect_text(prefect_server, [trial_id, rejected_id])
    for secret in (planted, wrong):
        for where in (tmp_path / "store", tmp_path / "work"):
            assert files_holding(where, secret) == []
            assert files_holding(where, secret.removeprefix("sk-proj-")) == []
        for text in (stopped.log, done.log, refused.log, added, added_wrong, shown):
            assert secret.removeprefix("sk-proj-") not in text


def test_a_docker_canary_whose_provider_is_unreachable_fails_naming_it(
    prefect_server: Any, tmp_path: Path
) -> None:
    """An account whose provider URL points at a closed port, on Docker (the run network's
    relay cannot connect): the first run's Codex says it could not send its request, and the
    trial fails ``provider-unreachable`` naming the provider's host and port, Codex's words
    and the relay's, with nothing recorded or published -- not "budget-exhausted: spend
    unknown" after a probe pair that reached nothing. (Codex, not Claude Code: Codex gives
    up after 5 reconnects, ~25 s; Claude Code retries for ~3 minutes.)"""
    codex_binary()
    with socket.socket() as closed:  # a free port, closed again: nothing listens on it
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    planted = f"sk-proj-PLANTED{secrets.token_hex(12)}"
    env = {**prefect_server.env, "PLANTED_CREDENTIAL": planted}
    register_account(
        env, "nowhere", "codex", "--from-env", "PLANTED_CREDENTIAL",
        provider_url=f"http://127.0.0.1:{port}/v1",
    )  # fmt: skip
    trial_id = "canary-unreachable"
    failed = _approved(
        prefect_server, tmp_path, trial_id, profile="codex", task_filter=["fix-median"],
        strata=["cold"], repetitions=2, treated_arm="optimizer", quota_interval_s=1,
        account="nowhere", backend="docker", budget_tokens=1,
    )  # fmt: skip

    state, message = failed.state
    assert state == "FAILED", failed.log[-3000:]
    assert "provider-unreachable" in failed.log
    assert f"no request reached the provider at 127.0.0.1:{port}" in (message or ""), message
    assert "error sending request" in (message or "")  # Codex's own words
    assert f"could not connect to 127.0.0.1:{port}" in (message or "")  # the relay's
    run_dir = tmp_path / "work" / "runs" / trial_id
    assert not list(run_dir.glob("episodes/*/record.json"))
    assert not list(run_dir.glob("trials/evidence/*.json"))
    assert not (tmp_path / "store" / "runs" / trial_id).exists()
    assert planted.removeprefix("sk-proj-") not in failed.log
