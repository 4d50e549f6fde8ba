"""The Prefect form cannot hurt the operator (issue 29), in a real browser.

A real Prefect server (v1 UI), `pairlab serve`, Debian's chromium:

* a resume from the form: a 3-task run (started through the API with its own settings)
  loses 4 episode records, as an interrupted run would; the operator enters only its Run
  Id in the `evidence-eval` form, whose other fields hold the deployment's defaults
  (2 tasks, 5 repetitions, Arms empty: the default). The run goes on with its frozen
  settings (its 2 arms kept, not the intervention's 4): the 4 missing episodes run
  again, the 8 recorded ones are untouched, none is dropped, and the Logs tab says which
  settings were kept from the run;
* an impossible number (repetitions -1), an emptied required field (the Store), a
  credential pasted into the Model and arms without baseline are refused beside the field,
  and no flow run is created;
* a task of another suite is refused in one line on the run's page.

Screenshots: tmp_path, and $PAIRLAB_UI_SCREENSHOTS when set (tests/ui_support.py).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

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

RUN_ID = "ui-resume"
TASKS = ["fix-median", "answer-cache-env", "config-production-cache"]
DROPPED_TASK = "config-production-cache"
RUN_DONE_S = 600
RUN_CREATED_S = 300
PASTED = "sk-ant-oat01-" + "Ui5" * 10

pytestmark = [pytest.mark.timeout(2400)]


def _open_form(page: Any, url: str, deployment_id: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{url}/deployments/deployment/{deployment_id}/run", wait_until="commit")
    suite = form_field(page, "Suite").locator("button.p-select-button__control").first
    expect(suite).to_have_text("core")  # hydrated with the deployment's parameters


def _no_new_run(server: Any, deployment_id: str, known: set[str]) -> None:
    time.sleep(5)  # a refused form creates nothing; give a wrongly accepted one time to appear
    assert {r["id"] for r in runs_of(server, deployment_id)} == known


def _select(page: Any, label: str, option: str) -> None:
    from playwright.sync_api import expect

    button = form_field(page, label).locator("button.p-select-button__control").first
    options = page.locator(".p-select-option__text")
    button.focus()
    for _ in range(4):  # the v1 select opens with the arrow key once focused
        if options.first.is_visible():
            break
        page.keyboard.press("ArrowDown")
        page.wait_for_timeout(1500)
    options.filter(has_text=option).first.click()
    expect(button).to_have_text(option)


def _pick(page: Any, label: str, wanted: list[str]) -> None:
    """Select ``wanted`` in a multi-select field (an array of choices: tags)."""
    from playwright.sync_api import expect

    button = form_field(page, label).locator("button.p-select-button__control").first
    options = page.locator(".p-select-option__text")
    button.focus()
    for _ in range(4):  # the v1 select opens with the arrow key once focused
        if options.first.is_visible():
            break
        page.keyboard.press("ArrowDown")
        page.wait_for_timeout(1500)
    for option in wanted:
        options.filter(has_text=option).first.click()
    page.keyboard.press("Escape")
    if options.first.is_visible():  # still open: a click beside it closes it
        form_field(page, label).locator("span.schema-form-property__label").first.click()
    expect(options.first).to_be_hidden()


@pytest.mark.browser
@pytest.mark.prefect
@pytest.mark.e2e
def test_the_form_cannot_hurt_the_operator(prefect_server: Any, tmp_path: Path) -> None:
    require(CHROMIUM.exists(), "Debian chromium at /usr/bin/chromium")
    from playwright.sync_api import expect, sync_playwright

    serve_dir = tmp_path / "serve"
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with serving(prefect_server, serve_dir) as proc:
        deployment = wait_for_deployment(
            prefect_server, proc, serve_dir / "serve.log", "evidence-eval"
        )
        dep_id = deployment["id"]
        form_defaults = deployment["parameters"]["params"]
        assert form_defaults["task_filter"] != TASKS and form_defaults["repetitions"] == 5

        # A 3-task run with its own settings, then 4 of its 12 records gone (interrupted).
        started = api(
            prefect_server,
            "POST",
            f"/deployments/{dep_id}/create_flow_run",
            {
                "parameters": {
                    "params": {
                        **form_defaults,
                        "task_filter": TASKS,
                        "repetitions": 2,
                        "arms": ["baseline", "optimizer"],
                        "min_pairs": 2,
                        "run_id": RUN_ID,
                    }
                }
            },
        )
        wait_for_run(prefect_server, started["id"], ("COMPLETED",), RUN_DONE_S)
        staging = serve_dir / ".pairlab" / "work" / "runs" / RUN_ID
        for record in staging.glob(f"episodes/*{DROPPED_TASK}*/record.json"):
            record.unlink()
        kept = {p: p.read_bytes() for p in staging.glob("episodes/*/record.json")}
        assert len(kept) == 8
        known = {r["id"] for r in runs_of(prefect_server, dep_id)}

        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            try:
                page = new_ui_page(browser)
                submit = page.get_by_role("button", name="Submit")

                # 1. An impossible number and an emptied required field: each refused
                # beside its field, nothing created. (Prefect's form neither scrolls to them
                # nor says anything at Submit: docs/prefect-ui.md says to look up.)
                _open_form(page, prefect_server.url, dep_id)
                form_field(page, "Repetitions").locator("input").fill("-1")
                store_box = form_field(page, "Store").locator("textarea, input").first
                store_box.fill("")
                expect(store_box).to_have_value("")
                model_box = form_field(page, "Model").locator("textarea, input").first
                model_box.fill(PASTED)  # a credential pasted into a text field
                expect(model_box).to_have_value(PASTED)
                submit.click()
                expect(form_field(page, "Repetitions")).to_contain_text(
                    "-1 is less than the minimum of 1"
                )
                expect(form_field(page, "Store")).to_contain_text("'store' is a required property")
                expect(form_field(page, "Model")).to_contain_text(
                    "'no credential here (register it with pairlab account add)' was expected"
                )
                screenshot(page, shots, "ui-form-refuses-repetitions")
                _no_new_run(prefect_server, dep_id, known)

                # 2. Arms without the baseline: refused beside the field, nothing created.
                # (The field starts empty: the default, the baseline and every arm the
                # intervention supports.)
                _open_form(page, prefect_server.url, dep_id)
                arms = form_field(page, "Arms")
                expect(arms.locator(".p-tag")).to_have_count(0)
                _pick(page, "Arms", ["optimizer", "full"])
                expect(arms.locator(".p-tag")).to_have_count(2)
                screenshot(page, shots, "ui-form-arms-picked")
                submit.click()
                expect(arms).to_contain_text("does not contain items matching")
                screenshot(page, shots, "ui-form-refuses-arms")
                _no_new_run(prefect_server, dep_id, known)

                # 3. The resume: only the Run Id typed; the rest is the deployment's defaults.
                _open_form(page, prefect_server.url, dep_id)
                run_id_box = form_field(page, "Run Id").locator("textarea, input").first
                run_id_box.fill(RUN_ID)
                expect(run_id_box).to_have_value(RUN_ID)
                resumed = submit_and_wait_for_run(page, prefect_server, dep_id, RUN_CREATED_S, known)
                known.add(resumed)
                wait_for_run(prefect_server, resumed, ("COMPLETED",), RUN_DONE_S)
                page.goto(f"{prefect_server.url}/flow-runs/flow-run/{resumed}", wait_until="commit")
                body = page.locator("body")
                expect(body).to_contain_text(
                    f"run {RUN_ID} resumed; kept from the run's frozen settings:"
                )
                expect(body).to_contain_text("(8 already complete)")
                screenshot(page, shots, "ui-form-resume-logs", tall=True)

                # 4. A task of another suite: the run is refused in one line on its page.
                _open_form(page, prefect_server.url, dep_id)
                _select(page, "Suite", "claims-useful")
                foreign_box = form_field(page, "Run Id").locator("textarea, input").first
                foreign_box.fill("ui-foreign")
                expect(foreign_box).to_have_value("ui-foreign")
                try:
                    foreign = submit_and_wait_for_run(
                        page, prefect_server, dep_id, RUN_CREATED_S, known
                    )
                except AssertionError:
                    screenshot(page, shots, "ui-form-foreign-no-run", tall=True)
                    raise AssertionError(page.locator("body").inner_text()[-3000:]) from None
                wait_for_run(prefect_server, foreign, ("FAILED",), RUN_DONE_S)
                page.goto(f"{prefect_server.url}/flow-runs/flow-run/{foreign}", wait_until="commit")
                expect(page.locator("body")).to_contain_text(
                    "run ui-foreign refused [unknown-task]: task(s) fix-median, "
                    "answer-cache-env not in suite 'claims-useful'"
                )
                screenshot(page, shots, "ui-form-foreign-task", tall=True)
            finally:
                expect.set_options(timeout=None)
                browser.close()

    # Nothing dropped: the 8 kept records untouched, the 4 missing ones run again, 12 published.
    assert {p: p.read_bytes() for p in kept} == kept
    records = sorted(staging.glob("episodes/*/record.json"))
    assert len(records) == 12
    assert len(list(staging.glob(f"episodes/*{DROPPED_TASK}*/record.json"))) == 4
    store_run = serve_dir / "pairlab-store" / "runs" / RUN_ID
    assert len((store_run / "episodes.jsonl").read_text().splitlines()) == 12
    (resume,) = [json.loads(x) for x in (staging / "resumes.jsonl").read_text().splitlines()]
    assert {"task_filter", "repetitions", "arms", "min_pairs"} <= set(resume["taken_from_run"])
    # the UI sent the form's defaults: the flow run's parameters are not what ran
    sent = api(prefect_server, "GET", f"/flow_runs/{resumed}")["parameters"]["params"]
    assert sent["task_filter"] == form_defaults["task_filter"] and sent["repetitions"] == 5
    assert not (serve_dir / ".pairlab" / "work" / "runs" / "ui-foreign" / "settings.json").exists()
