"""What a finished run shows in the Prefect UI (issue 19, item 2): the headline artifact
and one cohort table per primary metric, built from report.json alone — the decision
labels are report.json's, a not-a-win effect says why, the tables fit a screen, and an
exploratory run says so everywhere."""

from __future__ import annotations

from typing import Any

import pytest

from pairlab.core.report.prefect_ui import (
    DECISION_LABELS,
    cohort_tables,
    decision_label,
    headline_markdown,
)
from pairlab.core.report.run import analyse_run, render_run_report
from tests.report_support import PLAN, settings, stored_records


def _report(pairs: int = 6, **overrides: Any) -> dict[str, Any]:
    records = stored_records(pairs)
    run_settings = settings(**overrides)
    analysis = analyse_run(records, run_settings, PLAN)
    return dict(render_run_report(run_settings, records, [], PLAN, analysis).payload)


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return _report()


def _primary_effects(report: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [
        (cohort, effect)
        for cohort in report["analysis"]["cohorts"]
        for effect in cohort["effects"]
        if effect["role"] == "primary"
    ]


def test_one_table_per_primary_metric_with_report_json_decisions(report: dict[str, Any]) -> None:
    tables = cohort_tables(report)
    primaries = _primary_effects(report)
    assert set(tables) == {e["metric"] for _, e in primaries} == {"totalTokens"}
    rows = tables["totalTokens"]
    assert len(rows) == len(primaries)
    for row, (_cohort, effect) in zip(rows, primaries, strict=True):
        assert row["contrast"] == f"{effect['treatment']} vs {effect['control']}"
        assert row["n"] == effect["n"]
        assert row["decision"] == DECISION_LABELS[effect["decision"]]
    # the fixture's `full` saves ~30%: wins exist, and a table shows every one of them
    wins = [e for _, e in primaries if e["decision"] == "primary-win"]
    assert wins and sum(r["decision"] == "primary win" for r in rows) == len(wins)


def test_a_saving_that_is_not_a_win_says_why(report: dict[str, Any]) -> None:
    rows = cohort_tables(report)["totalTokens"]
    for row, (_cohort, effect) in zip(rows, _primary_effects(report), strict=True):
        excludes_zero = effect["ciHigh"] is not None and effect["ciHigh"] < 0
        if excludes_zero and effect["decision"] != "primary-win":
            assert row["why not a win"], row
        if effect["decision"] == "primary-win":
            assert row["why not a win"] == ""
    reasons = {e["reason"] for _, e in _primary_effects(report) if e["reason"]}
    # one task's `full` regresses on correctness in one model (tests/report_support.py)
    assert "correctness-regressed" in reasons
    assert any(r["why not a win"] == "saving, correctness regressed" for r in rows)


def test_tables_are_narrow_enough_for_a_screen(report: dict[str, Any]) -> None:
    for rows in cohort_tables(report).values():
        for row in rows:
            assert len(row) == 7
            # about 7 px a character: the whole row fits the ~880 px artifact pane
            assert sum(len(str(v)) for v in row.values()) * 7 < 880, row


def test_headline_artifact_links_the_stored_outputs(report: dict[str, Any]) -> None:
    locations = {
        "report.html": "s3://bucket/p/runs/run-report/report.html",
        "forest.png": "s3://bucket/p/runs/run-report/forest.png",
        "manifest.json": "/store/runs/run-report/manifest.json",
    }
    text = headline_markdown(report, locations)
    assert text.startswith("# run `run-report`")
    assert "## Answer" not in text and "### " in text  # the headline, not the whole report
    assert (
        "[`s3://bucket/p/runs/run-report/report.html`](s3://bucket/p/runs/run-report/report.html)"
        in text
    )
    assert "- manifest.json: `/store/runs/run-report/manifest.json`" in text
    assert "forest plot" in text
    for line in text.splitlines():
        if line.startswith("| "):  # no zero counts: the table stays narrow
            assert " 0 " not in line, line


def test_an_exploratory_run_is_labelled_in_every_artifact() -> None:
    # gate 2 with 3 pairs a cohort, below the plan's 5: every tested effect is exploratory
    report = _report(pairs=3, gate=2, repetitions=3)
    assert report["meta"]["exploratory"] is True
    assert report["meta"]["all_below_gate"] is False  # 3 pairs reach the gate of 2
    text = headline_markdown(report, {})
    assert text.startswith("# EXPLORATORY — run")
    assert "Exploratory analysis" in text
    rows = cohort_tables(report)["totalTokens"]
    effects = [effect for _cohort, effect in _primary_effects(report)]
    # every effect the gate let through is labelled; an interval the skewness gate refused at
    # 3 pairs is `insufficient` (not computed), never exploratory, and says so
    computed = [r for r, e in zip(rows, effects, strict=True) if e["decision"] != "insufficient"]
    refused = [r for r, e in zip(rows, effects, strict=True) if e["decision"] == "insufficient"]
    assert computed and all(r["decision"].endswith("(exploratory)") for r in computed)
    assert all(r["decision"] == DECISION_LABELS["insufficient"] for r in refused)
    assert not any("win" in r["decision"] for r in rows)


def test_a_run_with_every_cohort_below_the_gate_says_so() -> None:
    # 1 repetition, the plan's gate of 5: not exploratory, and no cohort was decided
    report = _report(pairs=1, gate=5, repetitions=1)
    assert report["meta"]["exploratory"] is False
    assert report["meta"]["all_below_gate"] is True
    cohorts = report["analysis"]["cohorts"]
    assert cohorts and all(c["status"] == "insufficient" for c in cohorts)


def test_a_low_gate_with_enough_pairs_keeps_its_wins() -> None:
    # gate 2 but 6 pairs a cohort: the run is exploratory, its effects have the plan's pairs
    report = _report(gate=2)
    assert report["meta"]["exploratory"] is True
    assert headline_markdown(report, {}).startswith("# EXPLORATORY — run")
    rows = cohort_tables(report)["totalTokens"]
    assert any(r["decision"] == "primary win" for r in rows)
    assert not any("(exploratory)" in r["decision"] for r in rows)
    assert decision_label({"decision": "no-evidence", "n": 2}, 5) == "no evidence (exploratory)"
    assert decision_label({"decision": "insufficient", "n": 1}, 5) == "insufficient"
