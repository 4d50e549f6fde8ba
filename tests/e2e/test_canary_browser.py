"""Approving a paused canary trial in the Prefect UI (v1), with a real browser.

Debian's chromium driven by Playwright (never `playwright install`). The paused
run's page shows Resume; the "Resume Flow Run" form is generated from
CanaryApproval. Approving without the budget acknowledgement is refused and the
run stays paused; the valid approval resumes it and the trial completes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.canary_trial_support import (
    flow_run_of,
    start_trial,
    wait_for_input_schema,
    wait_for_state,
)
from tests.support import CHROMIUM, CHROMIUM_ARGS, require

pytestmark = [pytest.mark.browser, pytest.mark.prefect, pytest.mark.e2e, pytest.mark.timeout(900)]


def _resume_responses(page: Any) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def on_response(response: Any) -> None:
        if response.request.method == "POST" and response.url.endswith("/resume"):
            seen.append(response.json())

    page.on("response", on_response)
    return seen


def test_resume_form_refuses_unacknowledged_budget_then_approves(
    prefect_server: Any, tmp_path: Path
) -> None:
    require(CHROMIUM.exists(), "Debian chromium at /usr/bin/chromium")
    from playwright.sync_api import sync_playwright

    trial = start_trial(
        prefect_server,
        tmp_path,
        "canary-browser",
        task_filter=["fix-median"],
        strata=["cold"],
        repetitions=1,
    )
    try:
        run = wait_for_state(prefect_server, trial, "Paused")
        wait_for_input_schema(prefect_server, run["id"])
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
            )
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                responses = _resume_responses(page)
                page.goto(f"{prefect_server.url}/flow-runs/flow-run/{run['id']}")
                page.get_by_role("button", name="Resume").first.click(timeout=60_000)
                modal = page.locator(".p-modal").filter(has_text="Resume Flow Run")
                modal.get_by_text("Approver").first.wait_for(timeout=30_000)
                for label in ("Approve", "Approver", "Note", "Budget Acknowledged"):
                    assert modal.get_by_text(label).count() >= 1, label
                switches = modal.get_by_role("switch")
                texts = modal.locator("textarea")
                assert switches.count() == 2 and texts.count() == 2
                page.screenshot(path=str(tmp_path / "resume-form.png"), full_page=True)

                # invalid: approve without acknowledging the budget
                switches.nth(0).click()
                texts.nth(0).fill("ops-carol")
                texts.nth(1).fill("looks fine")
                modal.get_by_role("button", name="Submit").click()
                deadline = time.monotonic() + 30
                while not responses and time.monotonic() < deadline:
                    page.wait_for_timeout(250)
                page.screenshot(path=str(tmp_path / "resume-refused.png"), full_page=True)
                assert responses and responses[0]["status"] == "REJECT", responses
                page.get_by_text("budget_acknowledged").first.wait_for(timeout=10_000)
                page.wait_for_timeout(2000)
                assert flow_run_of(prefect_server, trial.trial_id)["state_name"] == "Paused"
                assert not (trial.run_dir / "episodes").exists()

                # valid: acknowledge the budget and submit again
                if not modal.is_visible():
                    page.get_by_role("button", name="Resume").first.click()
                switches = modal.get_by_role("switch")
                if switches.nth(0).get_attribute("aria-checked") != "true":
                    switches.nth(0).click()
                switches.nth(1).click()
                assert switches.nth(1).get_attribute("aria-checked") == "true"
                modal.get_by_role("button", name="Submit").click()
                deadline = time.monotonic() + 30
                while len(responses) < 2 and time.monotonic() < deadline:
                    page.wait_for_timeout(250)
                assert responses[-1]["status"] == "ACCEPT", responses
            finally:
                browser.close()
        result = trial.result()
    finally:
        trial.stop()

    assert result["outcome"] == "completed" and result["episodes"] == 2
    approval = json.loads((trial.run_dir / "trials" / "approval.json").read_text())
    assert approval["approver"] == "ops-carol" and approval["note"] == "looks fine"
    assert approval["budget_acknowledged"] is True
    assert (trial.run_dir / "trials" / "verdict.json").is_file()
    assert flow_run_of(prefect_server, trial.trial_id)["state_name"] == "Completed"
