"""Driving a real canary-trial flow run against a real Prefect server (integration + browser tests).

The flow runs in a child process (its own Prefect client, the server's env), so
the test process plays the operator: it finds the paused run through the API,
inspects the run dir, and resumes or rejects it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.prefect_server import PrefectServer
from tests.support import REPO_ROOT
from tests.ui_support import api  # one Prefect API helper (it retries the server's 503)

RUNNER = (
    "import json, sys\n"
    "from flows.canary.trial import canary_trial\n"
    "from flows.params import CanaryTrialParams\n"
    "params = CanaryTrialParams.model_validate_json(sys.argv[1])\n"
    "state = canary_trial(params, return_state=True)\n"
    "result = state.result(raise_on_failure=False)\n"
    "print('CANARY-STATE ' + json.dumps([state.type.value, state.message]))\n"
    "print('CANARY-RESULT ' + json.dumps(result, default=str))\n"
)


@dataclass
class TrialProcess:
    process: subprocess.Popen[str]
    trial_id: str
    work_dir: Path
    log: Path

    @property
    def run_dir(self) -> Path:
        return self.work_dir / "runs" / self.trial_id

    def result(self, timeout_s: float = 600) -> dict[str, Any]:
        self.process.wait(timeout=timeout_s)
        text = self.log.read_text(encoding="utf-8", errors="replace")
        assert self.process.returncode == 0, text[-4000:]
        line = next(ln for ln in text.splitlines() if ln.startswith("CANARY-RESULT "))
        return dict(json.loads(line.removeprefix("CANARY-RESULT ")))

    def final_state(self) -> tuple[str, str | None]:
        """The flow run's final state type and message (after :meth:`result`)."""
        text = self.log.read_text(encoding="utf-8", errors="replace")
        line = next(ln for ln in text.splitlines() if ln.startswith("CANARY-STATE "))
        kind, message = json.loads(line.removeprefix("CANARY-STATE "))
        return str(kind), message

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_trial(server: PrefectServer, tmp: Path, trial_id: str, **params: Any) -> TrialProcess:
    work_dir = tmp / "work"
    body = {
        "run_id": trial_id,
        "work_dir": str(work_dir),
        "store": str(tmp / "store"),
        "unrelated_concurrent_use": False,
        **params,
    }
    log = tmp / f"{trial_id}.log"
    env = {**server.env, "PYTHONPATH": str(REPO_ROOT)}
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", RUNNER, json.dumps(body)],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    return TrialProcess(proc, trial_id, work_dir, log)


def flow_run_of(server: PrefectServer, trial_id: str) -> dict[str, Any] | None:
    runs = api(server, "POST", "/flow_runs/filter", {"limit": 200})
    for run in runs:
        if (run.get("parameters") or {}).get("params", {}).get("run_id") == trial_id:
            return dict(run)
    return None


def wait_for_state(
    server: PrefectServer, trial: TrialProcess, state: str, timeout_s: float = 240
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        # a resumed trial id has earlier, ended runs too: any of its runs in ``state``
        runs = api(server, "POST", "/flow_runs/filter", {"limit": 200})
        for run in runs:
            ours = (run.get("parameters") or {}).get("params", {}).get("run_id") == trial.trial_id
            if ours and run.get("state_name") == state:
                return dict(run)
        if trial.process.poll() is not None:
            raise AssertionError(
                f"flow process ended early: {trial.log.read_text(errors='replace')[-4000:]}"
            )
        time.sleep(0.5)
    raise AssertionError(f"flow run {trial.trial_id} never reached {state}")


def wait_for_input_schema(
    server: PrefectServer, run_id: str, timeout_s: float = 60, *, description: bool = False
) -> None:
    """The paused run accepts input once its RunInput schema is stored. ``description``:
    wait for the form's description too -- Prefect stores it after the schema, in a second
    request, so a reader of the description right after the schema may get a 404 (seen
    under a cold CI's load)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = api(server, "GET", f"/flow_runs/{run_id}")
        keyset = ((run.get("state") or {}).get("state_details") or {}).get("run_input_keyset")
        if keyset:
            try:
                api(server, "GET", f"/flow_runs/{run_id}/input/{keyset['schema']}")
                if description:
                    api(server, "GET", f"/flow_runs/{run_id}/input/{keyset['description']}")
                return
            except urllib.error.HTTPError:
                pass
        time.sleep(0.5)
    raise AssertionError(
        "paused run never stored its input schema" + (" and description" if description else "")
    )


def latest_artifact(server: PrefectServer, key: str) -> dict[str, Any] | None:
    """The newest version of the artifact with ``key`` (None when there is none)."""
    found = api(server, "POST", "/artifacts/filter", {"artifacts": {"key": {"any_": [key]}}})
    return dict(max(found, key=lambda a: a["created"])) if found else None


def resume(server: PrefectServer, run_id: str, run_input: dict[str, Any]) -> dict[str, Any]:
    return dict(api(server, "POST", f"/flow_runs/{run_id}/resume", {"run_input": run_input}))


def simclient_processes(marker: str) -> list[int]:
    """Pids of live simclient processes whose command line or environment mentions ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"simclient" in cmdline and marker.encode() in cmdline + environ:
            found.append(int(entry.name))
    return found
