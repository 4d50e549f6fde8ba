"""A canary trial of the real Claude Code on a registered account (a subscription token),
against the stand-in provider, approved through the Prefect UI's Resume form in a real
browser (Debian's chromium, Playwright).

The form shows the approver what they sign: the account's certification line, its
five-hour window as read now with the trial's expected share of what remains and the
warning when it exceeds it, and the budget ceiling. The planted credential is nowhere in
the page; the same credential pasted into the form's note is refused by the server and
never stored (the run stays paused); the approval then goes through the form and the
trial (one AB/BA pair, local backend) runs to its end.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

import pytest

from tests.canary_trial_support import (
    api,
    flow_run_of,
    start_trial,
    wait_for_input_schema,
    wait_for_state,
)
from tests.real_cli_bins import claude_binary
from tests.standin_support import files_holding, register_account, running_standin
from tests.support import CHROMIUM, require
from tests.ui_support import launch_chromium, new_ui_page, screenshot

pytestmark = [
    pytest.mark.realcli,
    pytest.mark.browser,
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.prefect,
    pytest.mark.timeout(900),
]

WINDOW_LIMIT = 400_000.0  # the stand-in's five-hour window: one pair uses ~20 points
# the operator's estimate: 2 episodes x 60 points = 120% of the window, beyond the 99%
# a 0% whole-percent reading leaves (the warning); the ceiling still admits the first
# pair, the only one (a ceiling uses measured episodes, core/budget_window.py)
ESTIMATE_PER_EPISODE = 60
CEILING_PERCENT = 100


def _resume_responses(page: Any) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def on_response(response: Any) -> None:
        if response.request.method == "POST" and response.url.endswith("/resume"):
            seen.append(response.json())

    page.on("response", on_response)
    return seen


def _submit(page: Any, modal: Any, responses: list[dict[str, Any]]) -> dict[str, Any]:
    count = len(responses)
    modal.get_by_role("button", name="Submit").click()
    deadline = time.monotonic() + 60
    while len(responses) == count and time.monotonic() < deadline:
        page.wait_for_timeout(250)
    assert len(responses) > count, "the form sent no resume"
    return responses[-1]


def _in_view(pane: Any, text: str) -> bool:
    """Whether ``text`` lies inside the scrolling pane's visible box."""
    box = pane.bounding_box()
    item = pane.get_by_text(text).first.bounding_box()
    return bool(item["y"] >= box["y"] and item["y"] + item["height"] <= box["y"] + box["height"])


def _stored_inputs(server: Any, flow_run_id: str) -> str:
    """Every run input the server stored for the flow run (the schema, the description, a
    response once one was accepted)."""
    found = api(
        server, "POST", f"/flow_runs/{flow_run_id}/input/filter", {"prefix": "", "limit": 100}
    )
    return json.dumps(found)


def test_account_canary_approved_through_the_prefect_form(
    prefect_server: Any, tmp_path: Path
) -> None:
    require(CHROMIUM.exists(), "Debian chromium at /usr/bin/chromium")
    from playwright.sync_api import sync_playwright

    claude_binary()
    planted = f"sk-ant-oat01-PLANTED{secrets.token_hex(12)}"
    env = {**prefect_server.env, "PLANTED_CREDENTIAL": planted}
    trial_id = "canary-acct-form"
    with running_standin(tmp_path / "standin", "env:PLANTED_CREDENTIAL", env=env) as standin:
        base = standin.register("fix-median", five_hour_limit=WINDOW_LIMIT)
        register_account(
            env, "own", "claude", "--from-env", "PLANTED_CREDENTIAL", provider_url=base
        )
        trial = start_trial(
            prefect_server, tmp_path, trial_id, account="own", profile="claude",
            task_filter=["fix-median"], strata=["cold"], repetitions=1,
            treated_arm="optimizer", quota_interval_s=1,
            estimated_window_percent_per_episode=ESTIMATE_PER_EPISODE,
            budget_window_percent=CEILING_PERCENT,
        )  # fmt: skip
        try:
            run = wait_for_state(prefect_server, trial, "Paused", timeout_s=300)
            wait_for_input_schema(prefect_server, run["id"])
            with sync_playwright() as pw:
                browser = launch_chromium(pw)
                try:
                    page = new_ui_page(browser)
                    responses = _resume_responses(page)
                    page.goto(f"{prefect_server.url}/flow-runs/flow-run/{run['id']}")
                    page.get_by_role("button", name="Resume").first.click()
                    modal = page.locator(".p-modal").filter(has_text="Resume Flow Run")
                    modal.get_by_text("Approver").first.wait_for()
                    shown = modal.inner_text()
                    screenshot(page, tmp_path, "ui-account-canary-approval", tall=True)
                    page_shown = page.content() + page.locator("body").inner_text()

                    # 1. what the approver must see, rendered (markdown, nothing cut)
                    assert "Canary trial canary-acct-form: 2 episodes" in shown, shown
                    assert (
                        "Account own: not certified (pairlab certify --account own proves "
                        "the account path)" in shown
                    ), shown
                    assert (
                        "five-hour window (estimated 60 points per episode): 120% of the "
                        "window; read now: 0% used, at least 99% remaining (whole-percent "
                        "reading); the trial would use 121% of what remains — WARNING: "
                        "exceeds the remaining window by 21.0 points; the trial would "
                        "exhaust it" in shown
                    ), shown
                    assert f"Ceiling: {CEILING_PERCENT}% of each window." in shown, shown
                    assert "Approving requires the budget acknowledgement" in shown
                    assert "**" not in shown  # the description is rendered, not raw
                    # the description is its own scrolling pane above the form: what the
                    # approver signs is in view as the form opens, the rest by scrolling it
                    pane = modal.locator(".markdown-renderer").first
                    assert pane.evaluate("e => getComputedStyle(e).overflowY") in ("auto", "scroll")
                    for line in (
                        "not certified (pairlab certify --account own",
                        f"Ceiling: {CEILING_PERCENT}% of each window.",
                        "WARNING: exceeds the remaining window by 21.0 points",
                    ):
                        assert _in_view(pane, line), line
                    assert not _in_view(pane, "rejecting runs nothing")
                    pane.evaluate("e => { e.scrollTop = e.scrollHeight; }")
                    assert _in_view(pane, "rejecting runs nothing")
                    for secret in (planted, planted.removeprefix("sk-ant-oat01-")):
                        assert secret not in page_shown

                    # 2. the credential pasted into the note: refused, never stored
                    switches = modal.get_by_role("switch")
                    texts = modal.locator("textarea")
                    assert switches.count() == 2 and texts.count() == 2
                    switches.nth(0).click()  # approve
                    switches.nth(1).click()  # budget acknowledged
                    texts.nth(0).fill("ops-dana")
                    texts.nth(1).fill(f"token {planted}")
                    refused = _submit(page, modal, responses)
                    assert refused["status"] == "REJECT", refused
                    assert "'note'" in json.dumps(refused), refused
                    assert "no credential here" in json.dumps(refused), refused
                    page.get_by_text("no credential here").first.wait_for()
                    page_text = page.content() + page.locator("body").inner_text()
                    assert planted.removeprefix("sk-ant-oat01-") not in json.dumps(refused)
                    assert planted.removeprefix("sk-ant-oat01-") not in page_text
                    assert flow_run_of(prefect_server, trial_id)["state_name"] == "Paused"
                    assert planted.removeprefix("sk-ant-oat01-") not in _stored_inputs(
                        prefect_server, run["id"]
                    )
                    assert not (trial.run_dir / "episodes").exists()

                    # 3. approved through the form
                    if not modal.is_visible():
                        page.get_by_role("button", name="Resume").first.click()
                    texts = modal.locator("textarea")
                    texts.nth(1).fill("window share read, ceiling 100%")
                    switches = modal.get_by_role("switch")
                    for switch in (switches.nth(0), switches.nth(1)):
                        if switch.get_attribute("aria-checked") != "true":
                            switch.click()
                    accepted = _submit(page, modal, responses)
                    assert accepted["status"] == "ACCEPT", accepted
                finally:
                    browser.close()
            result = trial.result(timeout_s=900)
            final = trial.final_state()
        finally:
            trial.stop()
        token = base.rsplit("/", 1)[1]
        rows = (standin.ledgers / f"{token}.jsonl").read_text().splitlines()
        requests = [r for r in map(json.loads, filter(None, rows)) if r.get("kind") == "request"]

    assert final[0] == "COMPLETED", final
    assert result["outcome"] == "completed" and result["episodes"] == 2, result
    assert requests and all(r["status"] == 200 for r in requests)
    approval = json.loads((trial.run_dir / "trials" / "approval.json").read_text())
    assert approval["approver"] == "ops-dana" and approval["budget_acknowledged"] is True
    assert approval["note"] == "window share read, ceiling 100%"
    assert approval["account_certification"]["state"] == "not-certified"
    published = tmp_path / "store" / "runs" / trial_id
    assert json.loads((published / "manifest.json").read_text())["approval"] == approval
    # the credential: in nothing written, published or stored by the server
    stored = _stored_inputs(prefect_server, run["id"])
    assert "window share read" in stored  # the accepted decision is stored
    for secret in (planted, planted.removeprefix("sk-ant-oat01-")):
        for where in (tmp_path / "store", tmp_path / "work"):
            assert files_holding(where, secret) == []
        assert secret not in stored
        assert secret not in trial.log.read_text(errors="replace")
