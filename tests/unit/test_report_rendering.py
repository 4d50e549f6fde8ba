"""The report as a pure function of stored inputs: the headline's counts, report.md's
shape, report.html's self-containment, determinism, and `pairlab report` itself
(issue 16, items 4 and 5)."""

from __future__ import annotations

import json
import random
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pairlab.adapters.run.outputs import write_report_files
from pairlab.adapters.run.report_source import load_stored_run
from pairlab.core.analysis.metrics import METRICS
from pairlab.core.report.headline import COST_METRIC, QUESTIONS
from pairlab.core.report.run import analyse_run, render_run_report
from tests.report_support import (
    ARMS,
    MODELS,
    PLAN,
    TASKS,
    report_json,
    settings,
    stored_records,
    write_stored_run,
)
from tests.support import cli_exit


@pytest.fixture(scope="module")
def rendered() -> Any:
    records = stored_records()
    analysis = analyse_run(records, settings(), PLAN)
    return render_run_report(settings(), records, [], PLAN, analysis)


def _outcome(effect: dict[str, Any] | None) -> str:
    if effect is None:
        return "insufficient"
    return {
        "primary-win": "win",
        "secondary-win": "win",
        "regression": "regression",
        "insufficient": "insufficient",
    }.get(effect["decision"], "noEvidence")


def test_headline_counts_task_cohorts_per_model_and_contrast(rendered: Any) -> None:
    payload = rendered.payload
    headline = payload["headline"]
    assert headline["questions"] == list(QUESTIONS)
    groups = {g["model"]: g for g in headline["groups"]}
    assert sorted(groups) == list(MODELS)
    analysis = payload["analysis"]
    for model, group in groups.items():
        assert group["cohorts"] == len(TASKS)
        cohorts = [c for c in analysis["cohorts"] if c["key"]["model"] == model]
        for row in group["contrasts"]:
            t, c = row["treatment"], row["control"]
            assert row["cohorts"] == len(TASKS)
            for question, metric in (("tokens", "totalTokens"), ("cost", COST_METRIC)):
                expected = {"win": 0, "regression": 0, "noEvidence": 0, "insufficient": 0}
                for cohort in cohorts:
                    found = [
                        e
                        for e in cohort["effects"]
                        if (e["treatment"], e["control"], e["metric"]) == (t, c, metric)
                    ]
                    expected[_outcome(found[0] if found else None)] += 1
                assert {k: row[question][k] for k in expected} == expected, (model, t, question)
            # every cohort counted once per question, never pooled into one number
            for question in QUESTIONS:
                cell = row[question]
                assert (
                    sum(cell[k] for k in ("win", "regression", "noEvidence", "insufficient")) == 3
                )
    full = {
        g["model"]: next(r for r in g["contrasts"] if r["treatment"] == "full")
        for g in groups.values()
    }
    # full saves ~30% of tokens and half the quota: wins in every cohort of model-a
    assert full["model-a"]["tokens"]["win"] == 3
    assert full["model-a"]["subscription"]["win"] == 3
    # model-b's fix-median: a saving whose correctness regressed is not a win
    assert full["model-b"]["tokens"]["win"] == 2
    assert full["model-b"]["tokens"]["reasons"] == {"correctness-regressed": 1}
    optimizer = next(r for r in groups["model-a"]["contrasts"] if r["treatment"] == "optimizer")
    assert optimizer["subscription"]["win"] == 0
    assert optimizer["subscription"]["noEvidence"] == 3


def test_report_md_opens_with_the_answer_then_one_compact_table_per_cohort(
    rendered: Any,
) -> None:
    md: str = rendered.markdown
    assert md.index("## Answer") < md.index("## Cohorts") < md.index("## Method")
    head = md[: md.index("## Cohorts")]
    assert head.count("### ") == len(MODELS)  # one headline table per model
    cohorts = md[md.index("## Cohorts") : md.index("## Method")]
    sections = cohorts.split("\n### ")[1:]
    assert len(sections) == len(MODELS) * len(TASKS)
    never = [
        m
        for m in METRICS
        if m
        not in (
            "totalTokens",
            "uncachedInputTokens",
            "outputTokens",
            "latencyMs",
            "apiListPriceUsd",
        )
    ]
    for section in sections:
        tables = [line for line in section.splitlines() if line.startswith("|---")]
        assert len(tables) == 1  # one compact table
        rows = [
            line.split("|")[1].strip().strip("*")
            for line in section.splitlines()
            if line.startswith("| ")
        ]
        assert rows[0] == "metric" and rows[1] == "totalTokens"  # the primary metric first
        assert not set(never) & set(rows)
        (line,) = [x for x in section.splitlines() if x.startswith("No pair observed")]
        assert all(m in line for m in never)  # metrics null in every pair: one line
        assert "subscription verdict" in rows
        assert len(section.splitlines()) <= 30  # compact: about a screen per cohort


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += attrs


def test_report_html_is_self_contained(rendered: Any) -> None:
    html: str = rendered.html
    parser = _Tags()
    parser.feed(html)
    assert not {"script", "link", "img", "iframe", "object", "embed"} & set(parser.tags)
    for name, value in parser.attrs:
        assert name not in ("src", "href"), (name, value)  # nothing to fetch
        if name == "style":
            assert "url(" not in (value or "")
    assert "url(" not in html and "@import" not in html
    assert parser.tags.count("svg") >= 4
    assert html.count("http") == html.count('xmlns="http://www.w3.org/2000/svg"')
    assert html.index('id="answer"') < html.index('id="effects"') < html.index('id="quota"')


def test_the_report_is_a_pure_function_of_the_stored_inputs(rendered: Any) -> None:
    """Rendered again from the same inputs in another order: the same bytes."""
    records = stored_records()
    random.Random(3).shuffle(records)
    again = render_run_report(settings(), records, [], PLAN, analyse_run(records, settings(), PLAN))
    assert again.json_text == rendered.json_text
    assert again.markdown == rendered.markdown
    assert again.html == rendered.html
    payload = json.loads(rendered.json_text)
    assert payload["schema_version"] == 2 and list(payload)[:6] == [
        "schema_version",
        "kind",
        "cohorts",
        "price_catalog_version",
        "meta",
        "headline",
    ]
    # the effects table holds the token and the subscription effects, nulls kept
    metrics = set(rendered.effects["metric"].to_list())
    assert {"totalTokens", "quotaFiveHourConsumptionPct", "quotaSevenDayConsumptionPct"} <= metrics


def test_pairlab_report_re_renders_checks_and_refuses_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_stored_run(tmp_path)
    stored = load_stored_run(run)
    write_report_files(run, stored.render())
    assert cli_exit(["report", str(run), "--check"]) == 0
    capsys.readouterr()
    for flag, name in (("--json", "report.json"), ("--html", "report.html"), ("--md", "report.md")):
        assert cli_exit(["report", str(run), flag]) == 0
        assert capsys.readouterr().out == (run / name).read_text()
    assert cli_exit(["report", str(run)]) == 0  # markdown by default
    assert capsys.readouterr().out == (run / "report.md").read_text()
    out = tmp_path / "again"
    assert cli_exit(["report", str(run), "--out", str(out)]) == 0
    assert (out / "report.html").read_bytes() == (run / "report.html").read_bytes()
    assert report_json(out)["headline"] == report_json(run)["headline"]
    # a changed stored file is found
    (run / "report.md").write_text((run / "report.md").read_text() + "edited\n")
    capsys.readouterr()
    assert cli_exit(["report", str(run), "--check"]) == 1
    assert "report.md" in capsys.readouterr().err
    # clear refusals: exit 2 with a reason, never a traceback
    assert cli_exit(["report", str(tmp_path / "nope"), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["reason_code"] == "not-found"
    assert cli_exit(["report", str(run), "--html", "--json"]) == 2
    (run / "plan.json").unlink()
    assert cli_exit(["report", str(run)]) == 2
    assert "plan.json" in capsys.readouterr().err


def test_a_run_from_before_run_json_is_re_rendered_from_its_report_meta(tmp_path: Path) -> None:
    run = write_stored_run(tmp_path)
    (run / "run.json").unlink()
    meta = {
        "run_id": "run-report",
        "suite": "core",
        "profile": "sim",
        "backend": "local",
        "arms": list(ARMS),
        "repetitions": 6,
        "seed": 0,
        "client": "sim",
        "min_pairs": 5,
        "include_transcript": False,
    }
    (run / "report.json").write_text(json.dumps({"schema_version": 1, "meta": meta}))
    stored = load_stored_run(run)
    assert stored.settings.gate == 5 and stored.settings.quota_provider is None
    payload = stored.render().payload
    assert payload["headline"]["groups"]
    verdicts = [v for c in payload["subscription"]["cohorts"] for v in c["verdicts"]]
    assert verdicts and all(v["reasons"] == {"missing-quota-telemetry": 1} for v in verdicts)


def test_report_html_at_many_cohorts_draws_the_notable_ones_and_links_the_full_tables() -> None:
    """Issue 28: beyond FULL_COHORTS cohorts, report.html draws FULL_COHORTS of them -
    every regression first (here the last ten cohorts), then wins, then the rest - lists
    every cohort in one line and links the complete tables beside it; the answer still
    counts every cohort."""
    from pairlab.core.analysis.cohorts import analyse_cohorts
    from pairlab.core.report.headline import build_headline
    from pairlab.core.report.html import FULL_COHORTS, render_report_html
    from pairlab.core.report.markdown import build_report_json
    from pairlab.core.report.words import decision_tone
    from tests.unit.test_cohorts import cohort_records

    assert FULL_COHORTS == 100
    # wins, nothing, regressions (last); independent cohorts (identical ones would show the
    # skewness gate one shape 130 times over)
    savings = [100] * 110 + [0] * 10 + [-100] * 10
    records = [
        r
        for i, saving in enumerate(savings)
        for r in cohort_records(6, saving=saving, seed=i, taskId=f"t{i:03d}")
    ]
    analysis = analyse_cohorts(records, run_id="run-a", min_pairs=5, n_resamples=500).to_json()
    tones = {
        c["key"]["taskId"]: {decision_tone(e) for e in c["effects"]} for c in analysis["cohorts"]
    }
    assert "regression" in tones["t125"] and "win" in tones["t005"]  # the planted shapes
    assert not tones["t115"] & {"win", "regression"}
    headline = build_headline(analysis, None)
    html = render_report_html(build_report_json({"run_id": "run-a"}, analysis, None, headline))

    assert f"130 cohorts: the charts and tables below draw {FULL_COHORTS} of them" in html
    parser = _Tags()
    parser.feed(html)
    hrefs = [value for name, value in parser.attrs if name == "href"]
    assert hrefs == ["report.md", "effects.parquet"]  # the run's own files, nothing fetched
    drawn = html[html.index('<section id="cohorts">') : html.index('<section id="every-cohort">')]
    shown = {f"t{i:03d}" for i in range(130) if f"<summary>t{i:03d} " in drawn}
    planted = {f"t{i:03d}" for i in range(120, 130)}
    assert all("regression" in tones[t] for t in planted)
    ids = [f"t{i:03d}" for i in range(130)]  # the analysis's order
    # any effect's regression counts (a latency one too), then any win, then the rest
    regressed = [t for t in ids if "regression" in tones[t]]
    won = [t for t in ids if "win" in tones[t] and t not in regressed]
    rest = [t for t in ids if t not in regressed and t not in won]
    assert planted <= set(regressed) and len(regressed) < FULL_COHORTS < len(regressed + won)
    assert shown == set((regressed + won + rest)[:FULL_COHORTS])
    every = html[html.index('<section id="every-cohort">') :]
    assert all(f"<tr><td>t{i:03d} " in every for i in range(130))
    counted = headline["groups"][0]["cohorts"]
    assert counted == 130 and f"— {counted} task cohorts</h3>" in html
