"""Approving and rejecting a paused canary trial in the Prefect UI (v1), with a real browser.

Debian's chromium driven by Playwright (never `playwright install`). The paused
run's page shows Resume; the "Resume Flow Run" form is generated from
CanaryApproval and its description shows the budget with each quota window's
share. Approving without the budget acknowledgement is refused and the run stays
paused; the valid approval resumes it, the trial completes and its approval record
(who, when, note, budget acknowledgement) is in the published manifest and the
manifest artifact. A rejection ends the run Cancelled with who and why, the
manifest artifact says "rejected by <approver>: <note>", and nothing ran.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.canary_trial_support import (
    flow_run_of,
    latest_artifact,
    start_trial,
    wait_for_input_schema,
    wait_for_state,
)
from tests.support import CHROMIUM, CHROMIUM_ARGS, require
from tests.ui_support import screenshot

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
                # the budget acknowledgement is required, not "(Optional)"; the note is
                assert modal.get_by_text("Budget Acknowledged (Optional)").count() == 0
                assert modal.get_by_text("Note (Optional)").count() == 1
                # the budget, with the share of each window (2 x 20,000 of 300,000 tokens)
                assert "~40,000 tokens" in modal.inner_text()
                assert "five-hour window (300,000 tokens): 13.3% of the window" in (
                    modal.inner_text()
                )
                assert "WARNING" not in modal.inner_text()
                switches = modal.get_by_role("switch")
                texts = modal.locator("textarea")
                assert switches.count() == 2 and texts.count() == 2
                screenshot(page, tmp_path, "ui-canary-approval-form")

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
    assert approval["budget_acknowledged"] is True and approval["decided_at"]
    assert (trial.run_dir / "trials" / "verdict.json").is_file()
    assert flow_run_of(prefect_server, trial.trial_id)["state_name"] == "Completed"
    # the approval record is published: the store's manifest and the trial's manifest
    published = tmp_path / "store" / "runs" / trial.trial_id
    store_manifest = json.loads((published / "manifest.json").read_text())
    assert store_manifest["approval"] == approval
    trial_manifest = json.loads((published / "trials" / "manifest.json").read_text())
    assert trial_manifest["approval"] == approval
    # ... and shown in the published manifest artifact
    shown = latest_artifact(prefect_server, f"canary-manifest-{trial.trial_id}")
    assert shown is not None and "approved by ops-carol" in shown["data"].splitlines()[0]
    assert (
        f"approved by ops-carol at {approval['decided_at']}: looks fine (budget acknowledged)"
        in shown["data"]
    )
    assert str(published) in shown["description"]


def test_rejecting_at_the_form_cancels_the_trial_and_says_who(
    prefect_server: Any, tmp_path: Path
) -> None:
    require(CHROMIUM.exists(), "Debian chromium at /usr/bin/chromium")
    from playwright.sync_api import expect, sync_playwright

    # the default trial: 16 episodes x ~20,000 tokens = 106.7% of the five-hour window
    trial = start_trial(prefect_server, tmp_path, "canary-browser-reject")
    try:
        run = wait_for_state(prefect_server, trial, "Paused")
        wait_for_input_schema(prefect_server, run["id"])
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
            )
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.set_default_timeout(60_000)
                responses = _resume_responses(page)
                page.goto(f"{prefect_server.url}/flow-runs/flow-run/{run['id']}")
                page.get_by_role("button", name="Resume").first.click()
                modal = page.locator(".p-modal").filter(has_text="Resume Flow Run")
                modal.get_by_text("Approver").first.wait_for(timeout=30_000)
                text = modal.inner_text()
                assert "16 episodes" in text and "~320,000 tokens" in text
                assert "five-hour window (300,000 tokens): 106.7% of the window" in text
                assert "WARNING: exceeds the remaining window by 6.7 points" in text
                screenshot(page, tmp_path, "ui-canary-approval-warning")

                # reject: approve stays off; who and why are recorded
                texts = modal.locator("textarea")
                texts.nth(0).fill("ops-erin")
                texts.nth(1).fill("budget too high")
                modal.get_by_role("button", name="Submit").click()
                deadline = time.monotonic() + 30
                while not responses and time.monotonic() < deadline:
                    page.wait_for_timeout(250)
                assert responses and responses[0]["status"] == "ACCEPT", responses
                result = trial.result()

                # the run's page: Cancelled, not a green Completed
                page.reload()
                page.wait_for_load_state("networkidle")
                expect(page.get_by_text("Cancelled").first).to_be_visible()
                page.get_by_text("Artifacts", exact=True).first.click()
                key = f"canary-manifest-{trial.trial_id}"
                # one manifest card, updated in place: no stale "awaiting approval" left
                expect(
                    page.get_by_text("canary manifest — rejected by ops-erin: budget too high")
                ).to_be_visible()
                expect(page.locator("body")).not_to_contain_text("awaiting approval")
                page.get_by_text(key, exact=True).first.click()
                page.wait_for_url(re.compile(r"/artifacts/artifact/"), wait_until="commit")
                expect(page.locator("body")).to_contain_text(
                    f"Canary trial {trial.trial_id} — rejected by ops-erin: budget too high"
                )
                screenshot(page, tmp_path, "ui-canary-rejected-manifest", tall=True)
            finally:
                browser.close()
    finally:
        trial.stop()

    assert result["outcome"] == "rejected" and result["episodes"] == 0
    assert trial.final_state() == (
        "CANCELLED",
        "trial not run: rejected by ops-erin: budget too high",
    )
    server_run = flow_run_of(prefect_server, trial.trial_id)
    assert server_run is not None and server_run["state_type"] == "CANCELLED"
    assert server_run["state"]["message"] == "trial not run: rejected by ops-erin: budget too high"
    shown = latest_artifact(prefect_server, f"canary-manifest-{trial.trial_id}")
    assert shown is not None
    assert shown["data"].splitlines()[0] == (
        f"# Canary trial `{trial.trial_id}` — rejected by ops-erin: budget too high"
    )
    manifest = json.loads((trial.run_dir / "trials" / "manifest.json").read_text())
    assert manifest["approval"]["approver"] == "ops-erin"
    assert manifest["approval"]["budget_acknowledged"] is False
    # no episode ran
    assert not (trial.run_dir / "episodes").exists()
    assert not (trial.run_dir / "trials" / "evidence").exists()
