"""The canary-trial flow through the real Prefect engine and a real Prefect server.

The run pauses after freezing its manifest and runs nothing until a valid
approval resumes it; an invalid approval (approve without the budget
acknowledgement) is refused by the server and the run stays paused; a
rejection ends it with zero episodes executed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pairlab.core.canary import to_identifier
from pairlab.core.verdict import judge_file
from pairlab.core.verdict.loading import load_artifact
from pairlab.core.verdict.structure import artifact_findings, duplicate_run_ids, pair_findings
from tests.canary_trial_support import (
    flow_run_of,
    latest_artifact,
    resume,
    simclient_processes,
    start_trial,
    wait_for_input_schema,
    wait_for_state,
)

pytestmark = [pytest.mark.prefect, pytest.mark.timeout(900)]


def _assert_nothing_ran(run_dir: Path, trial_id: str) -> None:
    assert not (run_dir / "episodes").exists()
    assert not (run_dir / "trials" / "evidence").exists()
    assert not (run_dir.parent.parent / "sim-accounts" / trial_id).exists()
    assert simclient_processes(trial_id) == []


def test_approved_trial_runs_interleaved_and_is_judged(prefect_server: Any, tmp_path: Path) -> None:
    trial = start_trial(prefect_server, tmp_path, "canary-it-approve")
    try:
        run = wait_for_state(prefect_server, trial, "Paused")
        wait_for_input_schema(prefect_server, run["id"])
        manifest = json.loads((trial.run_dir / "trials" / "manifest.json").read_text())
        assert manifest["changed_dimensions"] == ["implementation-revision"]
        assert len(manifest["planned"]) == 16  # 2 tasks x cold/warm x 2 reps x 2 arms
        assert all(f["fixture_digest"].startswith("sha256:") for f in manifest["fixtures"])
        _assert_nothing_ran(trial.run_dir, trial.trial_id)

        refused = resume(
            prefect_server,
            run["id"],
            {"approve": True, "approver": "ops-alice", "note": "", "budget_acknowledged": False},
        )
        assert refused["status"] == "REJECT"
        assert flow_run_of(prefect_server, trial.trial_id)["state_name"] == "Paused"
        _assert_nothing_ran(trial.run_dir, trial.trial_id)

        accepted = resume(
            prefect_server,
            run["id"],
            {"approve": True, "approver": "ops-alice", "note": "go", "budget_acknowledged": True},
        )
        assert accepted["status"] == "ACCEPT"
        result = trial.result()
    finally:
        trial.stop()

    assert result["outcome"] == "completed" and result["episodes"] == 16
    trials = trial.run_dir / "trials"
    approval = json.loads((trials / "approval.json").read_text())
    assert approval["approver"] == "ops-alice" and approval["budget_acknowledged"] is True
    artifact = json.loads((trials / "artifact.json").read_text())
    assert artifact["schema_version"] == 1 and len(artifact["pairs"]) == 8
    # loom's pairs have no stratum: it is part of the opaque work-unit id <task>:<stratum>:r<n>
    assert {p["work_unit_id"].split(":")[1] for p in artifact["pairs"]} == {"cold", "warm"}
    # the artifact is loom's, structurally valid as written by the real flow
    decoded = load_artifact((trials / "artifact.json").read_bytes()).artifact
    assert decoded is not None and artifact_findings(decoded) == ()
    duplicates = duplicate_run_ids(decoded)
    assert all(pair_findings(decoded, pair, duplicates) == () for pair in decoded.pairs)
    # AB/BA interleaving: within each stratum and task the first arm alternates
    planned = manifest["planned"]
    firsts = [(p["stratum"], p["task_id"], p["arm"]) for p in planned if p["order"] == 0]
    for stratum in ("cold", "warm"):
        for task in ("fix-median", "config-production-cache"):
            arms = [a for s, t, a in firsts if s == stratum and t == task]
            assert arms[0] != arms[1]
    # equal scheduled intervals: whole epoch seconds, quota_interval_s long unless overrun
    overran = {to_identifier(e) for e in result["interval_overruns"]}
    for pair in artifact["pairs"]:
        for run_ in (pair["baseline"], pair["candidate"]):
            windows = {q["window"]: q for q in run_["quota_observations"]}
            assert set(windows) == {"five-hour", "seven-day"}
            if run_["run_id"] not in overran:
                assert {
                    q["observed_end_at"] - q["observed_start_at"] for q in windows.values()
                } == {4}
            assert run_["critical_path_ms"] is not None
            assert run_["notification_latency_ms"] is not None
            assert run_["accounting_complete"] and run_["accounting_provenance"] == "measured"
            assert set(run_["provider_tokens"]) == {"claude"}
    # written, re-read and judged identically
    verdict = json.loads((trials / "verdict.json").read_text())
    assert verdict == judge_file(trials / "artifact.json").to_json()
    assert result["verdict"] == verdict["verdict"]
    assert (trials / "verdict.txt").read_text().startswith(f"overall: {verdict['verdict']}")
    # a genuinely cheaper candidate on a private account: the subscription verdict is supported
    # unless an interval overran; an overrun interval is honestly longer, and a pair whose two
    # intervals then differ is never supported (interval mismatch; the others are judged as usual)
    if not overran:
        assert verdict["subscription_verdict"] == "supported-candidate", verdict
    assert len(verdict["pairs"]) == len(artifact["pairs"])
    for pair, judged in zip(artifact["pairs"], verdict["pairs"], strict=True):
        lasted = {
            (q["window"], side): q["observed_end_at"] - q["observed_start_at"]
            for side in ("baseline", "candidate")
            for q in pair[side]["quota_observations"]
        }
        if any(
            lasted[(w, "baseline")] != lasted[(w, "candidate")] for w in ("five-hour", "seven-day")
        ):
            assert judged["subscription_verdict"] != "supported-candidate", judged
    published = Path(tmp_path / "store" / "runs" / trial.trial_id / "manifest.json")
    store_manifest = json.loads(published.read_text())
    assert store_manifest["approval"]["approver"] == "ops-alice"
    assert store_manifest["verdict"] == verdict["verdict"]


def test_rejected_trial_executes_nothing(prefect_server: Any, tmp_path: Path) -> None:
    trial = start_trial(prefect_server, tmp_path, "canary-it-reject")
    try:
        run = wait_for_state(prefect_server, trial, "Paused")
        wait_for_input_schema(prefect_server, run["id"])
        answer = resume(
            prefect_server,
            run["id"],
            {
                "approve": False,
                "approver": "ops-bob",
                "note": "budget too high",
                "budget_acknowledged": False,
            },
        )
        assert answer["status"] == "ACCEPT"
        result = trial.result()
    finally:
        trial.stop()
    assert result["outcome"] == "rejected" and result["episodes"] == 0
    assert "ops-bob" in result["reason"]
    # a distinct final state, never a green Completed: Cancelled, saying who and why
    assert trial.final_state() == (
        "CANCELLED",
        "trial not run: rejected by ops-bob: budget too high",
    )
    run = flow_run_of(prefect_server, trial.trial_id)
    assert run is not None and run["state_type"] == "CANCELLED"
    shown = latest_artifact(prefect_server, f"canary-manifest-{trial.trial_id}")
    assert shown is not None
    assert "— rejected by ops-bob: budget too high" in shown["data"].splitlines()[0]
    manifest = json.loads((trial.run_dir / "trials" / "manifest.json").read_text())
    assert manifest["approval"]["outcome"] == "rejected"
    assert manifest["approval"]["approver"] == "ops-bob"
    approval = json.loads((trial.run_dir / "trials" / "approval.json").read_text())
    assert approval["outcome"] == "rejected" and approval["approved"] is False
    _assert_nothing_ran(trial.run_dir, trial.trial_id)
    assert not (trial.run_dir / "trials" / "artifact.json").exists()


def test_approval_timeout_executes_nothing(prefect_server: Any, tmp_path: Path) -> None:
    trial = start_trial(
        prefect_server, tmp_path, "canary-it-timeout", approval_timeout_s=3, strata=["cold"]
    )
    try:
        result = trial.result()
    finally:
        trial.stop()
    assert result["outcome"] == "timeout" and result["episodes"] == 0
    assert trial.final_state() == ("CANCELLED", "trial not run: not approved within 3 s")
    approval = json.loads((trial.run_dir / "trials" / "approval.json").read_text())
    assert approval["outcome"] == "timeout" and approval["approver"] is None
    _assert_nothing_ran(trial.run_dir, trial.trial_id)


def test_a_trial_stops_at_its_window_ceiling_and_a_raised_one_completes_it(
    prefect_server: Any, tmp_path: Path
) -> None:
    """``budget_window_percent`` on a canary: the approval says the ceiling; before each AB/BA
    pair the trial reads its account's windows (core/budget_window.py); the second pair
    would cross 20 % of the five-hour window, so the trial is judged and published on the
    first and ends Cancelled budget-exhausted; resumed with 100 % and approved again, it
    runs the second pair only."""
    trial_id = "canary-it-ceiling"
    small = {
        "task_filter": ["fix-median"], "strata": ["cold"], "repetitions": 2,
        "sim_five_hour_budget_tokens": 300_000,
    }  # fmt: skip
    go = {"approve": True, "approver": "ops-alice", "note": "", "budget_acknowledged": True}

    def approved(ceiling: int) -> tuple[dict[str, Any], tuple[str, str | None]]:
        trial = start_trial(
            prefect_server, tmp_path, trial_id, budget_window_percent=ceiling, **small
        )
        try:
            run = wait_for_state(prefect_server, trial, "Paused")
            wait_for_input_schema(prefect_server, run["id"])
            assert resume(prefect_server, run["id"], go)["status"] == "ACCEPT"
            return trial.result(), trial.final_state()
        finally:
            trial.stop()

    stopped, state = approved(20)
    run_dir = tmp_path / "work" / "runs" / trial_id
    assert state == (
        "CANCELLED",
        f"budget-exhausted: resume with Run Id {trial_id} and a higher ceiling",
    )
    assert stopped["outcome"] == "budget-exhausted" and stopped["episodes"] == 2
    assert "20% of the window" not in stopped["budget_stop"]  # the words are the rule's
    assert "five-hour window: used" in stopped["budget_stop"]
    first = {p.parent.name: p.read_bytes() for p in (run_dir / "episodes").glob("*/record.json")}
    assert len(first) == 2
    artifact = json.loads((run_dir / "trials" / "artifact.json").read_text())
    assert len(artifact["pairs"]) == 1  # judged on the pair that ran
    report = (tmp_path / "store" / "runs" / trial_id / "report.md").read_text()
    assert "STOPPED AT THE BUDGET CEILING (budget-exhausted)" in report and "2 of 4 runs" in report
    accounting = json.loads((run_dir / "budget-window.json").read_text())
    assert accounting["ceiling_percent"] == 20

    done, state = approved(100)
    assert state[0] == "COMPLETED" and done["outcome"] == "completed" and done["episodes"] == 4
    records = list((run_dir / "episodes").glob("*/record.json"))
    assert len(records) == 4
    assert {p.parent.name: p.read_bytes() for p in records if p.parent.name in first} == first
    assert len(json.loads((run_dir / "trials" / "artifact.json").read_text())["pairs"]) == 2
    # the start of the trial's accounting is kept across the resume
    kept = json.loads((run_dir / "budget-window.json").read_text())
    assert [w["start_percent"] for w in kept["windows"]] == [
        w["start_percent"] for w in accounting["windows"]
    ]
