"""A canary rejected from a served deployment ends Cancelled without a traceback (issue 29).

A real Prefect server and `pairlab serve`: the canary-trial deployment's run suspends for
approval, is rejected through the API (what the Resume form sends), and the next attempt
of the run (the same serve) ends Cancelled with its reason. Its logs hold no ERROR line
and no traceback: a rejection is an outcome, not a failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.canary_trial_support import wait_for_input_schema
from tests.ui_support import (
    api,
    serving,
    wait_for_deployment,
    wait_for_flow_processes,
    wait_for_run,
)

TRIAL_ID = "served-reject"

pytestmark = [pytest.mark.prefect, pytest.mark.e2e, pytest.mark.timeout(1200)]


def test_a_rejected_served_canary_logs_no_traceback(prefect_server: Any, tmp_path: Path) -> None:
    serve_dir = tmp_path / "serve"
    with serving(prefect_server, serve_dir) as proc:
        deployment = wait_for_deployment(
            prefect_server, proc, serve_dir / "serve.log", "canary-trial"
        )
        params = dict(deployment["parameters"]["params"])
        params.update(task_filter=["fix-median"], strata=["cold"], repetitions=1, run_id=TRIAL_ID)
        run = api(
            prefect_server,
            "POST",
            f"/deployments/{deployment['id']}/create_flow_run",
            {"parameters": {"params": params}},
        )
        wait_for_run(prefect_server, run["id"], ("PAUSED",), 300)
        wait_for_input_schema(prefect_server, run["id"])
        answer = api(
            prefect_server,
            "POST",
            f"/flow_runs/{run['id']}/resume",
            {
                "run_input": {
                    "approve": False,
                    "approver": "ops-gina",
                    "note": "not today",
                    "budget_acknowledged": False,
                }
            },
        )
        assert answer["status"] == "ACCEPT", answer
        done = wait_for_run(prefect_server, run["id"], ("CANCELLED",), 600)
        wait_for_flow_processes(proc)  # the run's process ends on its own before serve stops
    assert done["state"]["message"] == "trial not run: rejected by ops-gina: not today"
    body = {"logs": {"flow_run_id": {"any_": [run["id"]]}}, "sort": "TIMESTAMP_ASC"}
    logs = api(prefect_server, "POST", "/logs/filter", body)
    assert any("not run: rejected by ops-gina" in log["message"] for log in logs), logs
    errors = [log["message"] for log in logs if log["level"] >= 40]
    assert errors == [], errors
    assert not any("Traceback" in log["message"] for log in logs)
    assert "Traceback" not in (serve_dir / "serve.log").read_text()
