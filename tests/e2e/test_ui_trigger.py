"""Trigger an evaluation from the Prefect UI in a real browser and follow it there.

A real Prefect server (v1 UI) and `pairlab serve` as a subprocess (cwd a temp
dir, so the store lands there). Chromium (Debian's, driven by Playwright) opens
the `evidence-eval` deployment's "Custom run" form — typed choices for suite,
profile and tasks, units in duration titles, no "None" noise — and starts a run
(one task, 2 repetitions, min-pairs 2, a run id). Then, on the run's page:

* the run is named by pairlab's run id;
* the Logs tab shows the plan, each pair's start and end and the publish location;
* the Artifacts tab lists the headline first, then the cohort table; the table's
  decision labels equal report.json's; the headline links the stored report; the
  run (gate 2 < the plan's 5 pairs) is labelled exploratory.

Screenshots: tmp_path, and $PAIRLAB_UI_SCREENSHOTS when set (tests/ui_support.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from flows.deployments import form_choices
from pairlab.core.report.prefect_ui import decision_label, why_not
from tests.support import CHROMIUM, require
from tests.ui_support import (
    api,
    form_field,
    launch_chromium,
    new_ui_page,
    runs_of,
    screenshot,
    serving,
    submit_and_wait_for_run,
    wait_for_deployment,
    wait_for_run,
)

RUN_ID = "ui-run"
RUN_DONE_S = 600
# Under load (a 2-core machine shared with builds) the v1 UI's bundle can take minutes to
# boot. The test waits on what matters (an element of the page it needs, the flow run
# through the API), never on a navigation event or "network idle"; ui_support.UI_WAIT_MS
# bounds each wait.
RUN_CREATED_S = 300

pytestmark = [pytest.mark.timeout(1500)]


def _label(page: Any, label: str) -> str:
    text = form_field(page, label).locator(".schema-form-property__label").first.inner_text()
    return str(text).strip()


def _expected_rows(report: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(contrast, decision label, why) of every primary effect in report.json."""
    analysis = report["analysis"]
    plan_min = analysis["plan"]["min_pairs"] if analysis["exploratory"] else None
    return {
        (f"{e['treatment']} vs {e['control']}", decision_label(e, plan_min), why_not(e))
        for cohort in analysis["cohorts"]
        for e in cohort["effects"]
        if e["role"] == "primary"
    }


@pytest.mark.browser
@pytest.mark.prefect
@pytest.mark.e2e
def test_trigger_eval_from_the_ui_and_follow_it(prefect_server: Any, tmp_path: Path) -> None:
    require(CHROMIUM.exists(), "Debian chromium at /usr/bin/chromium")
    from playwright.sync_api import expect, sync_playwright

    serve_dir = tmp_path / "serve"
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with serving(prefect_server, serve_dir) as proc:
        deployment = wait_for_deployment(
            prefect_server, proc, serve_dir / "serve.log", "evidence-eval"
        )
        # Served by module path, so it resolves whatever directory serve or a worker runs in.
        assert deployment["entrypoint"] == "flows.evidence_eval.evidence_eval"
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            try:
                page = new_ui_page(browser)

                # Deployments list -> evidence-eval deployment page -> Run -> Custom run;
                # each step waits for the element the next one needs, not a navigation.
                page.goto(f"{prefect_server.url}/deployments", wait_until="commit")
                page.get_by_role("link", name="evidence-eval").first.click()
                expect(page).to_have_url(re.compile(deployment["id"]))
                run_button = page.get_by_role("button", name="Run", exact=True)
                expect(run_button).to_be_visible()
                run_button.click()
                page.get_by_text("Custom run").click()
                expect(form_field(page, "Repetitions")).to_be_visible()
                expect(page).to_have_url(re.compile(r"/deployment/[^/]+/run"))
                suite = form_field(page, "Suite").locator("button.p-select-button__control").first
                expect(suite).to_have_text("core")  # the form has its defaults: hydrated

                # The form is for people: choices, units, required fields, no None noise.
                body = page.locator("body")
                # no "None" noise on optional values; only the optional warm-stratum
                # section keeps its None/object switch (set to None: the section is off)
                none_noise = page.get_by_text('Property is type "None"')
                expect(none_noise).to_have_count(1)
                expect(form_field(page, "Warm").first).to_contain_text('Property is type "None"')
                for required in ("Suite", "Profile", "Repetitions", "Store"):
                    assert "(Optional)" not in _label(page, required), required
                assert _label(page, "Min Pairs") == "Min Pairs (Optional)"
                # empty = the baseline and every arm the intervention supports
                assert _label(page, "Arms") == "Arms (Optional)"
                expect(body).to_contain_text("Lease (seconds)")
                expect(body).to_contain_text("Poll (seconds)")
                expect(body).to_contain_text("Quota interval (seconds)")
                expect(form_field(page, "Episode Limit").first).to_contain_text(
                    "pairlab-episodes-<account>"
                )
                # the profile is a drop-down of the runner profiles, not free text
                profile = (
                    form_field(page, "Profile").locator("button.p-select-button__control").first
                )
                options = page.locator(".p-select-option__text")
                profile.focus()
                for _ in range(4):  # the v1 select opens with the arrow key once focused
                    if options.first.is_visible():
                        break
                    page.keyboard.press("ArrowDown")
                    page.wait_for_timeout(1500)
                expect(options.first).to_be_visible()
                offered = [o.strip() for o in options.all_inner_texts()]
                assert offered == form_choices().profiles, offered
                screenshot(page, shots, "ui-eval-form-profile-choices")
                page.keyboard.press("Escape")
                screenshot(page, shots, "ui-eval-form", tall=True)

                # One task (drop the second default), 2 repetitions, gate 2, a run id.
                tasks = form_field(page, "Task Filter")
                tasks.locator(".p-tag").filter(has_text="answer-cache-env").locator(
                    ".p-tag__dismiss"
                ).click()
                expect(tasks.locator(".p-tag")).to_have_count(1)
                expect(tasks.locator(".p-tag").first).to_have_text("fix-median")
                form_field(page, "Repetitions").locator("input").fill("2")
                form_field(page, "Min Pairs").locator("input").fill("2")
                form_field(page, "Run Id").locator("textarea, input").first.fill(RUN_ID)
                # the form holds the values before it is sent (a slow page may re-render)
                expect(form_field(page, "Repetitions").locator("input")).to_have_value("2")
                expect(form_field(page, "Min Pairs").locator("input")).to_have_value("2")
                expect(form_field(page, "Run Id").locator("textarea, input").first).to_have_value(
                    RUN_ID
                )
                submit = page.get_by_role("button", name="Submit")
                expect(submit).to_be_enabled()
                known = {r["id"] for r in runs_of(prefect_server, deployment["id"])}
                # what the click must do: a flow run on the server (not a page navigation)
                try:
                    flow_run_id = submit_and_wait_for_run(
                        page, prefect_server, deployment["id"], RUN_CREATED_S, known
                    )
                except AssertionError:
                    screenshot(page, shots, "ui-eval-submit-no-run", tall=True)
                    raise AssertionError(page.locator("body").inner_text()[-3000:]) from None

                run = wait_for_run(prefect_server, flow_run_id, ("COMPLETED",), RUN_DONE_S)
                assert run["name"] == RUN_ID  # the Prefect run name is pairlab's run id

                # The run's page: its name, and the Logs tab (the default tab).
                page.goto(
                    f"{prefect_server.url}/flow-runs/flow-run/{flow_run_id}", wait_until="commit"
                )
                expect(page.get_by_text("Completed").first).to_be_visible()
                expect(page.get_by_text(RUN_ID, exact=True).first).to_be_visible()
                logs = page.locator("body")
                expect(logs).to_contain_text(f"run {RUN_ID} plan: suite core, profile sim")
                expect(logs).to_contain_text(f"run {RUN_ID} is EXPLORATORY")
                for n in (1, 2):
                    # repetitions count from 0, as in the episode ids
                    expect(logs).to_contain_text(f"pair {n}/2 start: fix-median rep {n - 1}")
                    expect(logs).to_contain_text(f"pair {n}/2 end: fix-median rep {n - 1}")
                store_run = (serve_dir / "pairlab-store" / "runs" / RUN_ID).resolve()
                expect(logs).to_contain_text(f"run {RUN_ID} published to {store_run}")
                screenshot(page, shots, "ui-eval-logs", tall=True)

                # Artifacts tab: the headline first, then the cohort table, then progress.
                page.get_by_text("Artifacts", exact=True).first.click()
                headline_key, table_key = f"report-{RUN_ID}", f"cohorts-totaltokens-{RUN_ID}"
                headline_card = page.get_by_text(headline_key, exact=True).first
                table_card = page.get_by_text(table_key, exact=True).first
                expect(headline_card).to_be_visible()
                expect(table_card).to_be_visible()
                expect(page.locator("body")).to_contain_text("8/8 episodes (100%)")
                # the headline is the flow run's own artifact, listed above the task runs'
                first, second = headline_card.bounding_box(), table_card.bounding_box()
                assert first["y"] < second["y"], (first, second)
                screenshot(page, shots, "ui-eval-artifacts", tall=True)

                # The headline artifact: exploratory, the answer, a link to the report.
                headline_card.click()
                expect(page).to_have_url(re.compile(r"/artifacts/artifact/"))
                body = page.locator("body")
                expect(body).to_contain_text(f"EXPLORATORY — run {RUN_ID}")
                expect(body).to_contain_text("Exploratory analysis")
                expect(body).to_contain_text("optimizer vs baseline (1 task cohort)")
                expect(body).to_contain_text(f"report (HTML): {store_run / 'report.html'}")
                expect(body).to_contain_text(f"forest plot: {store_run / 'forest.png'}")
                expect(body).to_contain_text(f"manifest.json: {store_run / 'manifest.json'}")
                screenshot(page, shots, "ui-eval-headline", tall=True)

                # The cohort table: report.json's decisions, fitting the 1440 px screen.
                page.goto(
                    f"{prefect_server.url}/flow-runs/flow-run/{flow_run_id}", wait_until="commit"
                )
                page.get_by_text("Artifacts", exact=True).first.click()
                page.get_by_text(table_key, exact=True).first.click()
                expect(page).to_have_url(re.compile(r"/artifacts/artifact/"))
                table = page.locator("table").first
                expect(table.locator("tbody tr")).to_have_count(3)
                heads = [h.strip() for h in table.locator("th").all_inner_texts()]
                assert heads == [
                    "task",
                    "contrast",
                    "n",
                    "effect",
                    "95% CI",
                    "decision",
                    "why not a win",
                ]
                shown = set()
                for row in table.locator("tbody tr").all():
                    cells = [c.strip() for c in row.locator("td").all_inner_texts()]
                    shown.add((cells[1], cells[5], cells[6]))
                report = json.loads((store_run / "report.json").read_text())
                assert shown == _expected_rows(report)
                box = table.bounding_box()
                assert box["x"] + box["width"] <= 1440, box  # nothing off-screen
                width = page.evaluate(
                    "(t) => t.scrollWidth <= t.clientWidth + 1", table.element_handle()
                )
                assert width, "the cohort table scrolls sideways"
                screenshot(page, shots, "ui-eval-cohort-table", tall=True)
            finally:
                expect.set_options(timeout=None)  # back to Playwright's default for others
                browser.close()

    # The form values reached the flow: one task x 2 repetitions x 4 arms, in serve's cwd.
    params = api(prefect_server, "GET", f"/flow_runs/{flow_run_id}")["parameters"]["params"]
    assert params["task_filter"] == ["fix-median"] and params["profile"] == "sim"
    assert params["repetitions"] == 2 and params["min_pairs"] == 2 and params["run_id"] == RUN_ID
    lines = (store_run / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 8
    assert (store_run / "manifest.json").is_file()
    # the console stayed quiet: no INFO progress lines in serve's own output
    assert "pair 1/2 start" not in (serve_dir / "serve.log").read_text()
