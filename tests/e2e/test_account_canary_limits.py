"""A canary trial of the real Codex on a ChatGPT login (its ``auth.json``), against the
stand-in provider started as an external server, through a real Prefect server, and a
provider's usage limit mid-trial (issue 27 items 4 and 5):

1. the approval shows the login's windows read from ``backend-api/wham/usage`` with the
   trial's share of what remains; a token ceiling of 1 stops it after the probe pair
   (``budget-exhausted``);
2. the stand-in then holds a usage limit from its next model request (its admin
   ``PUT /admin/episodes/<t>/faults``, a ``faults`` ledger row: the instrument's ground
   truth); the resumed trial's next run meets it: Codex gives up at once (one refused
   request, no retry loop), the run is recorded excluded as ``provider-limit`` with
   Codex's words, nothing more runs, the trial is judged on its complete pair and ends
   Cancelled ``provider-limit``;
3. the limit lifted, a resume runs the limited pair again whole and completes the trial
   with each run once (the earlier attempt kept aside);

and the login's tokens (access, refresh, id) are in nothing the trials wrote, published,
logged or showed. A second test: the real Claude Code on a subscription token limited at
the trial's first run (no complete pair: judged inconclusive, ``no-comparison-pairs``),
then resumed to completion.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_account_canary import GO, _approved, _prefect_text
from tests.integration.test_account_episode import _chatgpt_login
from tests.real_cli_bins import claude_binary, codex_binary
from tests.standin_support import (
    StandIn,
    files_holding,
    ledger_requests,
    register_account,
    running_standin,
)

pytestmark = [
    pytest.mark.realcli,
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.prefect,
    pytest.mark.timeout(1200),
]

# a window no fix-median run comes near: the approval reads it, nothing exhausts it
WINDOW_LIMIT = 50_000_000.0
assert GO["approve"] is True


def _faults(standin: StandIn, token: str, faults: list[dict[str, Any]]) -> dict[str, Any]:
    """Replace the stand-in episode's planned faults (its admin API); the ledger row."""
    answer = httpx.put(f"{standin.url}/admin/episodes/{token}/faults", json={"faults": faults})
    answer.raise_for_status()
    return dict(answer.json())


def _model_requests(standin: StandIn, token: str) -> int:
    answer = httpx.get(f"{standin.url}/admin/episodes/{token}")
    answer.raise_for_status()
    return int(answer.json()["model_requests"])


def _records(run_dir: Path) -> dict[str, bytes]:
    return {p.parent.name: p.read_bytes() for p in run_dir.glob("episodes/*/record.json")}


def test_codex_chatgpt_login_canary_meets_a_usage_limit_and_resumes_it(
    prefect_server: Any, tmp_path: Path
) -> None:
    codex_binary()
    login, tokens = _chatgpt_login(tmp_path, stale=False)
    env = dict(prefect_server.env)
    trial_id = "canary-chatgpt"
    params = {
        "profile": "codex", "task_filter": ["fix-median"], "strata": ["cold"],
        "repetitions": 2, "treated_arm": "optimizer", "quota_interval_s": 1,
        "account": "plus", "estimated_window_percent_per_episode": 1,
    }  # fmt: skip
    run_dir = tmp_path / "work" / "runs" / trial_id
    with running_standin(tmp_path / "standin", f"file:{login}", env=env) as standin:
        base = standin.register("fix-median", five_hour_limit=WINDOW_LIMIT)
        token = base.rsplit("/", 1)[1]
        added = register_account(
            env, "plus", "codex", "--from-file", str(login),
            provider_url=f"{base}/backend-api/codex",
        )  # fmt: skip

        # 1. approved, stopped by its token ceiling after the probe pair
        stopped = _approved(prefect_server, tmp_path, trial_id, budget_tokens=1, **params)
        first = _records(run_dir)
        # 2. the provider holds a usage limit from its next model request on
        held = _faults(
            standin,
            token,
            [{"kind": "usage-limit-429", "at_request": _model_requests(standin, token)}],
        )
        limited = _approved(
            prefect_server, tmp_path, trial_id, budget_tokens=1_000_000_000, **params
        )
        after_limit = _records(run_dir)
        said = {
            p.parent.name: json.loads(p.read_text())
            for p in run_dir.glob("episodes/*/provider-limit.json")
        }
        evidence = {
            json.loads(p.read_text())["episode_id"]: json.loads(p.read_text())
            for p in (run_dir / "trials" / "evidence").glob("*.json")
        }
        limited_report = (run_dir / "report.md").read_text()
        limited_requests = ledger_requests(standin.ledgers / f"{token}.jsonl")
        # 3. the limit lifts; resumed, approved again: the limited pair runs again whole
        lifted = _faults(standin, token, [])
        done = _approved(prefect_server, tmp_path, trial_id, budget_tokens=1_000_000_000, **params)
        ledger_lines = (standin.ledgers / f"{token}.jsonl").read_text().splitlines()

    # the approval showed the login's windows, read from its usage endpoint before the pause
    assert "five-hour window" in stopped.form and "read now: 0% used" in stopped.form
    assert "of what remains" in stopped.form, stopped.form
    seen = json.loads((run_dir / "trials" / "windows-before-approval.json").read_text())
    assert {o["source"] for o in seen} == {"codex-usage-endpoint"}
    assert {o["window"] for o in seen} >= {"five-hour"}
    assert stopped.state[0] == "CANCELLED", stopped.log[-3000:]
    assert stopped.result["outcome"] == "budget-exhausted" and len(first) == 2

    # 2: the limited run, excluded with its reason; the rest of the trial not run
    state, message = limited.state
    assert state == "CANCELLED", limited.log[-3000:]
    assert (
        message == f"provider-limit: resume with Run Id {trial_id} once the provider's limit lifts"
    )
    halt = limited.result
    assert halt["outcome"] == "provider-limit" and halt["episodes"] == 3, halt
    assert len(halt["provider_limited"]) == 1 and "usage-limit" in halt["provider_limit"]
    limited_id = halt["provider_limited"][0]
    assert len(after_limit) == 3
    assert {k: after_limit[k] for k in first} == first  # the first pair untouched
    (limited_dir,) = set(after_limit) - set(first)
    record = json.loads(after_limit[limited_dir])
    assert record["episodeId"] == limited_id and record["excludedReason"] == "provider-limit"
    assert list(said) == [limited_dir]
    assert (said[limited_dir]["kind"], said[limited_dir]["source"]) == ("usage-limit", "cli")
    assert "usage limit" in said[limited_dir]["message"].lower()  # Codex's own words
    assert len(evidence) == 3
    assert evidence[limited_id]["excluded_reason"] == "provider-limit"
    assert evidence[limited_id]["limit_kind"] == "usage-limit"
    # the instrument's ground truth: one refused request, at the held fault, none after it
    assert held["from_request"] >= 2 and lifted["faults"] == []
    refused = [r for r in limited_requests if r["status"] == 429]
    assert len(refused) == 1 and refused[0]["fault"] == "usage-limit-429", refused
    assert refused[0]["request_index"] == held["from_request"]
    model = [r for r in limited_requests if str(r["path"]).endswith("/codex/responses")]
    assert refused[0] == model[-1]  # no model request after the limited run's

    # judged on the complete pair alone, the stop said in the published report
    assert "STOPPED BY A PROVIDER LIMIT (provider-limit)" in limited_report
    assert (tmp_path / "store" / "runs" / trial_id / "trials" / "artifact.json").is_file()

    # 3: resumed to completion, each run once, the limited attempt kept aside
    assert done.state[0] == "COMPLETED", done.log[-3000:]
    assert done.result["outcome"] == "completed" and done.result["episodes"] == 4
    records = _records(run_dir)
    assert len(records) == 4 and {k: records[k] for k in first} == first
    parsed = [json.loads(r) for r in records.values()]
    assert all(r["client"] == "codex" and r["excludedReason"] is None for r in parsed), parsed
    lines = (run_dir / "episodes.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["episodeId"] for line in lines) == sorted(
        r["episodeId"] for r in parsed
    )
    assert [p.name for p in (run_dir / "provider-limited").iterdir()] == [f"{limited_dir}.1"]
    (aside,) = (run_dir / "trials" / "provider-limited").iterdir()
    assert json.loads(aside.read_text())["excluded_reason"] == "provider-limit"
    artifact = json.loads((run_dir / "trials" / "artifact.json").read_text())
    assert len(artifact["pairs"]) == 2
    assert "PROVIDER LIMIT" not in (run_dir / "report.md").read_text()
    rows = [json.loads(line) for line in ledger_lines if line.strip()]
    assert [r["kind"] for r in rows].count("faults") == 2
    model_calls = [r for r in rows if str(r.get("path")).endswith("/backend-api/codex/responses")]
    assert [r["status"] for r in model_calls].count(429) == 1  # the limited run's, only
    assert all(r["status"] == 200 for r in model_calls if r["fault"] is None)

    # the login's tokens: in nothing written, published, printed or shown by the server
    shown = _prefect_text(prefect_server, [trial_id])
    for secret in (tokens["access_token"], tokens["refresh_token"], tokens["id_token"]):
        for where in (tmp_path / "store", tmp_path / "work"):
            assert files_holding(where, secret) == []
        for text in (stopped.log, limited.log, done.log, added, shown):
            assert secret not in text


def test_claude_canary_limited_at_its_first_run_judges_nothing_and_resumes(
    prefect_server: Any, tmp_path: Path
) -> None:
    """The real Claude Code on a subscription token, the stand-in holding a usage limit
    from the trial's first model request: Claude Code gives up at once with its own words,
    the first run is excluded ``provider-limit``, the trial stops with no complete pair
    (judged: no pairs, inconclusive; published) and ends Cancelled ``provider-limit``;
    the limit lifted, a resume sets that run aside and completes the trial, each run once.
    The token is in nothing written, published, printed or shown."""
    claude_binary()
    planted = f"sk-ant-oat01-PLANTED{secrets.token_hex(12)}"
    env = {**prefect_server.env, "PLANTED_CREDENTIAL": planted}
    trial_id = "canary-claude-limit"
    params = {
        "profile": "claude", "task_filter": ["fix-median"], "strata": ["cold"],
        "repetitions": 1, "treated_arm": "optimizer", "quota_interval_s": 1,
        "account": "own", "budget_tokens": 1_000_000_000,
    }  # fmt: skip
    run_dir = tmp_path / "work" / "runs" / trial_id
    with running_standin(tmp_path / "standin", "env:PLANTED_CREDENTIAL", env=env) as standin:
        base = standin.register("fix-median")
        token = base.rsplit("/", 1)[1]
        added = register_account(
            env, "own", "claude", "--from-env", "PLANTED_CREDENTIAL", provider_url=base
        )
        _faults(standin, token, [{"kind": "usage-limit-429", "at_request": 0}])
        limited = _approved(prefect_server, tmp_path, trial_id, **params)
        said = [json.loads(p.read_text()) for p in run_dir.glob("episodes/*/provider-limit.json")]
        verdict = json.loads((run_dir / "trials" / "verdict.json").read_text())
        published = sorted(
            p.name for p in (tmp_path / "store" / "runs" / trial_id / "trials").iterdir()
        )
        _faults(standin, token, [])
        done = _approved(prefect_server, tmp_path, trial_id, **params)
        requests = ledger_requests(standin.ledgers / f"{token}.jsonl")

    assert limited.state == (
        "CANCELLED",
        f"provider-limit: resume with Run Id {trial_id} once the provider's limit lifts",
    ), limited.log[-3000:]
    assert limited.result["outcome"] == "provider-limit" and limited.result["episodes"] == 1
    assert [(s["kind"], s["source"]) for s in said] == [("usage-limit", "cli")]
    assert "hit your 5-hour limit" in said[0]["message"]  # Claude Code's own words
    assert verdict["verdict"] == "inconclusive"
    assert "no-comparison-pairs" in verdict["reason_codes"]
    assert {"artifact.json", "evidence", "verdict.json"} <= set(published)
    refused = [r for r in requests if r["status"] == 429]
    assert len(refused) == 1 and refused[0]["request_index"] == 0  # no retry

    assert done.state[0] == "COMPLETED", done.log[-3000:]
    assert done.result["outcome"] == "completed" and done.result["episodes"] == 2
    records = [json.loads(r) for r in _records(run_dir).values()]
    assert len(records) == 2 and all(r["excludedReason"] is None for r in records)
    assert len(list((run_dir / "provider-limited").iterdir())) == 1
    assert len(list((run_dir / "trials" / "provider-limited").iterdir())) == 1
    assert len(json.loads((run_dir / "trials" / "artifact.json").read_text())["pairs"]) == 1

    shown = _prefect_text(prefect_server, [trial_id])
    for where in (tmp_path / "store", tmp_path / "work"):
        assert files_holding(where, planted.removeprefix("sk-ant-oat01-")) == []
    for text in (limited.log, done.log, added, shown):
        assert planted.removeprefix("sk-ant-oat01-") not in text
