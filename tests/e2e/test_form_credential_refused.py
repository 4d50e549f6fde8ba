"""A credential pasted into a run form is refused by the Prefect server before it stores
anything (issue 27, item 2).

A real Prefect server and `pairlab serve` (the deployments as served, with their form
schemas): creating a flow run of `evidence-eval` or `canary-trial` with a planted
credential in a text field (the model, a task of task_filter, the store, a nested section's
text, a review dimension) is answered 409 naming the field, without the value; no flow run
exists afterwards and the value is in no flow run's parameters. The deployments' own
parameters still create a run. Then the deployments as `prefect deploy` leaves them (the
flow's raw schema; here with enforcement off too) get the refusal back from `pairlab forms`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.ui_support import API_RETRIES, api, runs_of, serving, wait_for_deployment

PASTED = "sk-ant-oat01-" + "Qz7" * 10
NO_CREDENTIAL = "'no credential here (register it with pairlab account add)' was expected"

pytestmark = [pytest.mark.timeout(900)]


def _create(server: Any, deployment_id: str, parameters: dict[str, Any]) -> tuple[int, str]:
    """POST create_flow_run: (status, the server's answer as text). A run that is created
    is scheduled a day ahead, so `pairlab serve` leaves it alone."""
    later = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    body = {
        "parameters": parameters,
        "state": {"type": "SCHEDULED", "state_details": {"scheduled_time": later}},
    }
    req = urllib.request.Request(
        f"{server.api_url}/deployments/{deployment_id}/create_flow_run",
        method="POST",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    for attempt in range(API_RETRIES + 1):
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            # 503: the server's SQLite was locked under load and nothing was written (as
            # tests/ui_support.api); any other answer is the server's word on the request
            if exc.code != 503 or attempt == API_RETRIES:
                return exc.code, exc.read().decode()
            time.sleep(2**attempt)
    raise AssertionError("unreachable")


def _planted(params: dict[str, Any], path: tuple[str | int, ...]) -> dict[str, Any]:
    out = json.loads(json.dumps(params))
    node: Any = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = f"my key: {PASTED}"
    return {"params": out}


def _stored_nowhere(server: Any) -> None:
    every_run = api(server, "POST", "/flow_runs/filter", {})
    assert PASTED not in json.dumps([r["parameters"] for r in every_run])


def _refused(
    server: Any, deployment: dict[str, Any], path: tuple[str | int, ...], field: str
) -> None:
    before = {r["id"] for r in runs_of(server, deployment["id"])}
    status, answer = _create(
        server, deployment["id"], _planted(deployment["parameters"]["params"], path)
    )
    assert status == 409, (status, answer)
    assert f"Validation failed for field {field!r}" in answer and NO_CREDENTIAL in answer, answer
    assert PASTED not in answer
    assert {r["id"] for r in runs_of(server, deployment["id"])} == before


@pytest.mark.prefect
@pytest.mark.e2e
def test_a_credential_in_a_run_form_is_refused_before_the_server_stores_it(
    prefect_server: Any, tmp_path: Path
) -> None:
    serve_dir = tmp_path / "serve"
    with serving(prefect_server, serve_dir) as proc:
        log = serve_dir / "serve.log"
        evidence = wait_for_deployment(prefect_server, proc, log, "evidence-eval")
        canary = wait_for_deployment(prefect_server, proc, log, "canary-trial")
        assert evidence["enforce_parameter_schema"] and canary["enforce_parameter_schema"]

        for path, field in [
            (("model",), "params.model"),
            (("task_filter", 0), "params.task_filter[0]"),
            (("store",), "params.store"),
            (("dispatch", "deployment"), "params.dispatch.deployment"),
        ]:
            _refused(prefect_server, evidence, path, field)
        for path, field in [
            (("store",), "params.store"),
            (("review_dimensions", 0), "params.review_dimensions[0]"),
            (("intervention_id",), "params.intervention_id"),
        ]:
            _refused(prefect_server, canary, path, field)
        _stored_nowhere(prefect_server)

        # the deployments' own parameters (what the form starts from) still create a run
        created = []
        for deployment in (evidence, canary):
            status, answer = _create(prefect_server, deployment["id"], deployment["parameters"])
            assert status == 201, (status, answer)
            created.append(json.loads(answer)["id"])

        # as `prefect deploy` leaves a deployment: the flow's raw schema, and here the
        # enforcement off too; `pairlab forms` gives the refusal back and turns it on
        from prefect.utilities.callables import parameter_schema

        from flows.evidence_eval import evidence_eval

        raw = parameter_schema(evidence_eval).model_dump()
        assert "no credential here" not in json.dumps(raw)
        api(
            prefect_server,
            "PATCH",
            f"/deployments/{evidence['id']}",
            {"parameter_openapi_schema": raw, "enforce_parameter_schema": False},
        )
        forms = subprocess.run(
            [str(Path(sys.executable).parent / "pairlab"), "forms"],
            env=prefect_server.env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert forms.returncode == 0, forms.stderr[-3000:]
        assert "form updated: evidence-eval/evidence-eval" in forms.stdout
        again = api(prefect_server, "GET", f"/deployments/{evidence['id']}")
        assert again["enforce_parameter_schema"] is True
        _refused(prefect_server, again, ("model",), "params.model")
        _stored_nowhere(prefect_server)

        for run_id in created:  # leave no scheduled run on the session's server
            api(prefect_server, "DELETE", f"/flow_runs/{run_id}")
