"""SIGTERM to `pairlab serve` in the middle of an eval (issue 29, item 7).

A real Prefect server and `pairlab serve`; the evidence-eval deployment's default run
(started through the API) is stopped by SIGTERM once a few episodes are recorded. The
run's last pairlab log line and an ``interrupted-<run>`` artifact say "interrupted:
resume with Run Id X" and how many episodes are recorded; a resume with that Run Id
(the form's defaults otherwise) under a new `pairlab serve` runs only the rest.
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.prefect_server import stop_process_group
from tests.ui_support import api, start_serve, wait_for_deployment, wait_for_run

RUN_ID = "eval-sigterm"
STOP_AFTER_RECORDS = 4

pytestmark = [pytest.mark.prefect, pytest.mark.e2e, pytest.mark.timeout(1800)]


def _logs(server: Any, flow_run_id: str) -> list[str]:
    body = {"logs": {"flow_run_id": {"any_": [flow_run_id]}}, "sort": "TIMESTAMP_ASC"}
    return [str(log["message"]) for log in api(server, "POST", "/logs/filter", body)]


def _wait_for_group_exit(pgid: int, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        assert time.monotonic() < deadline, "the interrupted flow's process never exited"
        time.sleep(0.5)


def test_sigterm_mid_eval_says_how_to_resume(prefect_server: Any, tmp_path: Path) -> None:
    serve_dir = tmp_path / "serve"
    staging = serve_dir / ".pairlab" / "work" / "runs" / RUN_ID
    first = start_serve(prefect_server, serve_dir, "serve-1.log")
    try:
        deployment = wait_for_deployment(
            prefect_server, first, serve_dir / "serve-1.log", "evidence-eval"
        )
        params = {**deployment["parameters"]["params"], "run_id": RUN_ID}
        run = api(
            prefect_server,
            "POST",
            f"/deployments/{deployment['id']}/create_flow_run",
            {"parameters": {"params": params}},
        )
        deadline = time.monotonic() + 600
        while len(list(staging.glob("episodes/*/record.json"))) < STOP_AFTER_RECORDS:
            assert time.monotonic() < deadline, "the eval recorded nothing in time"
            assert first.poll() is None, (serve_dir / "serve-1.log").read_text()[-3000:]
            time.sleep(0.2)
        os.kill(first.pid, signal.SIGTERM)
        first.wait(timeout=60)  # pairs already running may outlive serve's 8 s grace
    finally:
        if first.poll() is None:
            stop_process_group(first, timeout=10)
    wait_for_run(prefect_server, run["id"], ("CANCELLED",), 120)
    _wait_for_group_exit(first.pid)  # pairs that were running finish, then the flow exits
    # the flow sets Cancelled saying how to resume as it stops; serve's runner proposes its own
    # Cancelled ("Runner is shutting down.") when it signals the flow, and under load that one
    # may come last and be the state shown: the flow's is in the run's state history either way
    stopped = api(prefect_server, "GET", f"/flow_runs/{run['id']}")
    assert stopped["state"]["type"] == "CANCELLED", stopped["state"]
    history = api(prefect_server, "GET", f"/flow_run_states/?flow_run_id={run['id']}")
    ours = f"interrupted: resume with Run Id {RUN_ID}"
    assert any(s["type"] == "CANCELLED" and s["message"] == ours for s in history), history
    assert stopped["state"]["message"] in (ours, "Runner is shutting down.")
    recorded = len(list(staging.glob("episodes/*/record.json")))
    planned = 2 * 5 * 4  # the deployment's default: 2 tasks x 5 repetitions x 4 arms
    assert STOP_AFTER_RECORDS <= recorded < planned

    time.sleep(3)  # the API log handler's last batch
    ours = [m for m in _logs(prefect_server, run["id"]) if m.startswith(f"run {RUN_ID}")]
    last = ours[-1]
    assert last.startswith(f"run {RUN_ID} interrupted: resume with Run Id {RUN_ID}"), ours[-3:]
    said = re.search(r"; (\d+) of (\d+) episodes recorded in (.+)$", last)
    assert said is not None, last
    assert int(said[1]) <= recorded and int(said[2]) == planned
    assert Path(said[3]) == staging.resolve()
    artifacts = api(
        prefect_server,
        "POST",
        "/artifacts/filter",
        {"artifacts": {"key": {"any_": [f"interrupted-{RUN_ID}"]}}},
    )
    assert artifacts and f"resume with Run Id {RUN_ID}" in artifacts[0]["data"], stopped

    # the resume: Run Id only; the rest runs, what was recorded is kept
    kept = {p: p.read_bytes() for p in staging.glob("episodes/*/record.json")}
    second = start_serve(prefect_server, serve_dir, "serve-2.log")
    try:
        again = api(
            prefect_server,
            "POST",
            f"/deployments/{deployment['id']}/create_flow_run",
            {"parameters": {"params": params}},
        )
        wait_for_run(prefect_server, again["id"], ("COMPLETED",), 900)
    finally:
        stop_process_group(second, timeout=30)
    assert {p: p.read_bytes() for p in kept} == kept
    assert len(list(staging.glob("episodes/*/record.json"))) == planned
    store_run = serve_dir / "pairlab-store" / "runs" / RUN_ID
    assert len((store_run / "episodes.jsonl").read_text().splitlines()) == planned
