"""Trigger an evaluation from the Prefect UI in a real browser and see its report.

A real Prefect server (v1 UI) and `pairlab serve` as a subprocess (cwd a temp
dir, so the store lands there). Chromium (Debian's, driven by Playwright) opens
the `evidence-eval` deployment, starts a custom run with parameters filled in
the generated form (one task, 2 repetitions, min-pairs 2, a run id), waits for
the run to complete and opens its Artifacts tab, where the report artifact is.
Screenshots go to tmp_path.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.prefect_server import stop_process_group
from tests.support import CHROMIUM, CHROMIUM_ARGS, require

RUN_ID = "ui-run"
SERVE_READY_S = 300
RUN_DONE_S = 600


def _api(api_url: str, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        api_url + path, method=method, data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b"null")


@contextlib.contextmanager
def _serving(server: Any, cwd: Path) -> Iterator[subprocess.Popen[bytes]]:
    cwd.mkdir(parents=True, exist_ok=True)
    log = (cwd / "serve.log").open("wb")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "pairlab"), "serve"],
        cwd=cwd,
        env=server.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        stop_process_group(proc, timeout=30)
        log.close()


def _wait_for_deployment(server: Any, proc: subprocess.Popen[bytes], log: Path) -> dict[str, Any]:
    deadline = time.monotonic() + SERVE_READY_S
    while True:
        assert proc.poll() is None, f"pairlab serve exited:\n{log.read_text()[-3000:]}"
        found = [
            d
            for d in _api(server.api_url, "POST", "/deployments/filter", {})
            if d["name"] == "evidence-eval"
        ]
        if found:
            dep: dict[str, Any] = found[0]
            return dep
        assert time.monotonic() < deadline, "evidence-eval deployment never appeared"
        time.sleep(1)


def _created_run(server: Any, deployment_id: str) -> str:
    deadline = time.monotonic() + 60
    while True:
        runs = _api(
            server.api_url,
            "POST",
            "/flow_runs/filter",
            {"deployments": {"id": {"any_": [deployment_id]}}},
        )
        if runs:
            assert len(runs) == 1, runs
            return str(runs[0]["id"])
        assert time.monotonic() < deadline, "the UI created no flow run"
        time.sleep(0.5)


def _field(page: Any, label: str) -> Any:
    """The form property whose label starts with ``label`` (innermost enclosing property)."""
    return page.locator(
        f"xpath=//span[contains(@class,'schema-form-property__label') and starts-with(normalize-space(.), '{label}')]"
        "/ancestor::div[contains(concat(' ', normalize-space(@class), ' '), ' schema-form-property ')][1]"
    )


@pytest.mark.browser
@pytest.mark.prefect
@pytest.mark.e2e
def test_trigger_eval_from_the_ui_and_see_its_report(prefect_server: Any, tmp_path: Path) -> None:
    require(CHROMIUM.exists(), "Debian chromium at /usr/bin/chromium")
    from playwright.sync_api import expect, sync_playwright

    serve_dir = tmp_path / "serve"
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with _serving(prefect_server, serve_dir) as proc:
        deployment = _wait_for_deployment(prefect_server, proc, serve_dir / "serve.log")
        # Served by module path, so it resolves whatever directory serve or a worker runs in.
        assert deployment["entrypoint"] == "flows.evidence_eval.evidence_eval"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
            )
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.set_default_timeout(60_000)

                # Deployments list -> evidence-eval deployment page.
                page.goto(f"{prefect_server.url}/deployments")
                page.get_by_role("link", name="evidence-eval").first.click()
                page.wait_for_url(re.compile(r"/deployments/deployment/"), wait_until="commit")
                assert deployment["id"] in page.url
                page.screenshot(path=str(shots / "1-deployment.png"))

                # Run -> Custom run: the form generated from EvidenceEvalParams.
                page.get_by_role("button", name="Run", exact=True).click()
                page.screenshot(path=str(shots / "1b-run-menu.png"))
                page.get_by_text("Custom run").click()
                page.wait_for_url(re.compile(r"/deployment/[^/]+/run"), wait_until="commit")
                expect(_field(page, "Repetitions")).to_be_visible()

                tasks = _field(page, "Task Filter")
                tasks.locator("textarea").nth(1).wait_for()
                # Remove the second default task (answer-cache-env): keep fix-median only.
                tasks.locator("textarea").nth(1).locator(
                    "xpath=ancestor::div[.//button][1]"
                ).locator("button").first.click()
                expect(tasks.locator("textarea")).to_have_count(1)
                expect(tasks.locator("textarea").first).to_have_value("fix-median")

                _field(page, "Repetitions").locator("input").fill("2")
                min_pairs = _field(page, "Min Pairs")
                min_pairs.get_by_role("button", name="int", exact=True).click()
                min_pairs.locator("input").fill("2")
                run_id = _field(page, "Run Id")
                run_id.get_by_role("button", name="str", exact=True).click()
                run_id.locator("textarea, input").first.fill(RUN_ID)
                page.screenshot(path=str(shots / "2-form.png"), full_page=True)

                page.get_by_role("button", name="Submit").click()
                # The UI returns to the deployment page; the new run is listed under Runs.
                page.wait_for_url(re.compile(r"/deployment/[^/?]+(\?|$)"), wait_until="commit")
                flow_run_id = _created_run(prefect_server, deployment["id"])
                page.locator(f"a[href*='{flow_run_id}']").first.click()
                page.wait_for_url(re.compile(rf"/runs/flow-run/{flow_run_id}"), wait_until="commit")

                # The run completes (the page shows its state; reload until it does).
                deadline = time.monotonic() + RUN_DONE_S
                while True:
                    state = _api(prefect_server.api_url, "GET", f"/flow_runs/{flow_run_id}")[
                        "state"
                    ]
                    if state["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
                        break
                    assert time.monotonic() < deadline, f"run still {state['type']}"
                    time.sleep(2)
                assert state["type"] == "COMPLETED", (
                    state,
                    (serve_dir / "serve.log").read_text()[-3000:],
                )
                page.reload()
                page.wait_for_load_state("networkidle")
                expect(page.get_by_text("Completed").first).to_be_visible()
                page.screenshot(path=str(shots / "3-run.png"))

                # Artifacts tab: the report artifact of this run.
                page.get_by_text("Artifacts", exact=True).first.click()
                report_key = f"report-{RUN_ID}"
                expect(page.get_by_text(report_key).first).to_be_visible()
                page.screenshot(path=str(shots / "4-artifacts.png"), full_page=True)
                # Open the report card: the artifact page renders the report's markdown.
                page.get_by_text(report_key, exact=True).last.click()
                page.wait_for_url(re.compile(r"/artifacts/artifact/"), wait_until="commit")
                report_md = (serve_dir / "pairlab-store/runs" / RUN_ID / "report.md").read_text()
                heading = next(line for line in report_md.splitlines() if line.startswith("# "))
                title = heading[2:].replace("`", "").strip()  # rendered: code spans lose backticks
                expect(page.locator("body")).to_contain_text(title)
                page.screenshot(path=str(shots / "5-report.png"), full_page=True)
            finally:
                browser.close()

    # The form values reached the flow: one task x 2 repetitions x 4 arms, in serve's cwd.
    params = _api(prefect_server.api_url, "GET", f"/flow_runs/{flow_run_id}")["parameters"][
        "params"
    ]
    assert params["task_filter"] == ["fix-median"]
    assert params["repetitions"] == 2 and params["min_pairs"] == 2 and params["run_id"] == RUN_ID
    run_store = serve_dir / "pairlab-store" / "runs" / RUN_ID
    lines = (run_store / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 8
    assert (run_store / "manifest.json").is_file()
    assert all((shots / f"{n}.png").stat().st_size > 0 for n in ("1-deployment", "4-artifacts"))
