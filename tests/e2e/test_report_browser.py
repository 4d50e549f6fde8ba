"""The HTML report of a real evidence eval, opened in a real browser (issue 16, item 5).

Debian's chromium driven by Playwright (never `playwright install`). The page is
the run's own report.html opened from disk: the screenshot shows the headline
and the plots, the headline's counts on the page are report.json's, and the page
made no network request (every request is recorded and asserted; any that left
the file would also be aborted, so a failure cannot be hidden by a slow network).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flows.evidence_eval import evidence_eval
from flows.params import EvidenceEvalParams
from pairlab.core.report.words import headline_cell
from tests.support import CHROMIUM, CHROMIUM_ARGS, require

pytestmark = [pytest.mark.browser, pytest.mark.prefect, pytest.mark.e2e]


def test_html_report_shows_headline_and_plots_without_network(
    prefect_harness: None, tmp_path: Path
) -> None:
    require(CHROMIUM.exists(), "Debian chromium at /usr/bin/chromium")
    from playwright.sync_api import sync_playwright

    run_id = "report-browser"
    params = EvidenceEvalParams(
        run_id=run_id,
        task_filter=["fix-median", "answer-cache-env"],
        arms=["baseline", "optimizer", "full"],
        repetitions=3,
        min_pairs=2,
        seed=5,
        backend="local",
        store=str(tmp_path / "store"),
        work_dir=str(tmp_path / "work"),
    )
    state = evidence_eval(params, return_state=True)
    assert state.is_completed(), state
    published = tmp_path / "store" / "runs" / run_id
    page_path = published / "report.html"
    report: dict[str, Any] = json.loads((published / "report.json").read_text())
    html = page_path.read_text()
    for tag in ("<script", "<link", "<img", "<iframe", "@import", "url("):
        assert tag not in html, tag  # nothing that could fetch

    requests: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.on("request", lambda r: requests.append(r.url))
            page.route(
                "**/*",
                lambda route: (
                    route.continue_() if route.request.url.startswith("file://") else route.abort()
                ),
            )
            page.goto(page_path.as_uri(), wait_until="load")
            answer = page.locator("#answer")
            answer.wait_for(timeout=30_000)
            assert answer.is_visible()
            # the headline's counts as report.json has them, cell by cell
            (group,) = report["headline"]["groups"]
            heading = f"{group['client']} {group['clientVersion']} · {group['model']}"
            assert page.get_by_text(heading).first.is_visible()
            rows = answer.locator("table.answer tr")
            assert rows.count() == 1 + len(group["contrasts"])
            for i, row in enumerate(group["contrasts"], start=1):
                cells = rows.nth(i).locator("td")
                for j, question in enumerate(report["headline"]["questions"]):
                    expected = headline_cell(question, row[question]).replace("**", "")
                    assert cells.nth(j).inner_text().split("\n")[-1] == expected
            # the plots: the primary metric's forest plot first, in the first screen
            charts = page.locator("svg.chart")
            assert charts.count() >= 4  # tokens, list price, two quota windows, correctness
            first = page.locator("#effects h3").first
            assert "totalTokens" in first.inner_text()
            box = charts.first.bounding_box()
            assert box is not None and box["height"] > 100
            shot = page.screenshot(path=str(tmp_path / "report.png"), full_page=False)
            assert len(shot) > 20_000  # a rendered page, not a blank one
            page.screenshot(path=str(tmp_path / "report-full.png"), full_page=True)
        finally:
            browser.close()
    assert requests == [page_path.as_uri()], requests  # only the file itself
