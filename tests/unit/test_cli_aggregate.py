"""`pairlab aggregate`: a real JSONL file in, the table or JSON out, errors as exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import cli_exit
from tests.unit.test_cohorts import cohort_records, lines_of


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli_exit(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "episodes.jsonl"
    path.write_text("\n".join(lines_of(cohort_records(6))) + "\n", encoding="utf-8")
    return path


def test_json_output(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["aggregate", str(log), "--json", "--resamples", "1000"], capsys)
    assert code == 0
    (cohort,) = json.loads(out)["cohorts"]
    assert cohort["status"] == "ok" and cohort["pairs"] == 6
    win = next(e for e in cohort["effects"] if e["metric"] == "totalTokens")
    assert win["win"] is True


def test_table_output_and_run_id_from_the_records(
    log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(["aggregate", str(log), "--resamples", "1000"], capsys)
    assert code == 0
    assert "run run-a;" in out and "| optimizer vs baseline | totalTokens |" in out
    code, again, _ = run_cli(["aggregate", str(log), "--resamples", "1000"], capsys)
    assert again == out  # deterministic
    _, other, _ = run_cli(["aggregate", str(log), "--resamples", "1000", "--run-id", "x"], capsys)
    assert "run x;" in other


def test_a_malformed_line_is_an_error_naming_it(
    log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with log.open("a", encoding="utf-8") as handle:
        handle.write('{"episodeId": "broken"\n')
    code, out, err = run_cli(["aggregate", str(log)], capsys)
    assert code == 2 and out == ""
    assert f"{log}:13:" in err and "malformed-input" in err


def test_gate_below_two_is_refused(
    log: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run_cli(["aggregate", str(log), "--min-pairs", "1", "--json"], capsys)
    assert code == 2 and json.loads(out)["reason_code"] == "invalid-min-pairs"
    monkeypatch.setenv("TOKEN_OPTIMIZER_EVAL_MIN_PAIRS", "7")
    code, out, _ = run_cli(["aggregate", str(log), "--json", "--resamples", "500"], capsys)
    assert code == 0 and json.loads(out)["cohorts"][0]["status"] == "insufficient"


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["aggregate", str(tmp_path / "nope.jsonl")], capsys)
    assert code == 2 and "no such file" in err


def test_the_same_log_analysed_twice_gives_byte_identical_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Determinism: seeds come from names (run id, cohort key, pair ids), never from data or
    the schedule; worker processes and threads give the same bytes."""
    import pairlab.core.analysis.engine_pool as engine
    from tests.unit.test_cohorts import cohort_records

    records = [
        r
        for task in ("t1", "t2", "t3")
        for r in cohort_records(8, saving=40, arms=("baseline", "optimizer", "full"), taskId=task)
    ]
    path = tmp_path / "episodes.jsonl"
    path.write_text("\n".join(lines_of(records)) + "\n", encoding="utf-8")
    outs = []
    for _ in range(2):
        code, out, _ = run_cli(["aggregate", str(path), "--json", "--resamples", "2000"], capsys)
        assert code == 0
        outs.append(out.encode())
    assert outs[0] == outs[1]
    payload = json.loads(outs[0])
    assert payload["decisionRule"]["interval"] == "studentized-hybrid"
    assert all(
        e["decisionLow"] is not None
        for c in payload["cohorts"]
        for e in c["effects"]
        if e["n"] >= 5
    )
    original = engine.PROCESS_POOL_MIN_COHORTS
    try:
        engine.PROCESS_POOL_MIN_COHORTS = 2
        code, out, _ = run_cli(["aggregate", str(path), "--json", "--resamples", "2000"], capsys)
    finally:
        engine.PROCESS_POOL_MIN_COHORTS = original
    assert code == 0 and out.encode() == outs[0]


def test_a_gate_below_the_plan_is_exploratory_and_claims_no_win(
    log: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOKEN_OPTIMIZER_EVAL_MIN_PAIRS", raising=False)
    code, out, _ = run_cli(
        ["aggregate", str(log), "--json", "--resamples", "1000", "--min-pairs", "2"], capsys
    )
    payload = json.loads(out)
    assert code == 0 and payload["exploratory"] is True and payload["gate"] == 2
    assert payload["allBelowGate"] is False
    plan = log.parent / "plan.yaml"
    plan.write_text("schema_version: 1\nid: seven\nmin_pairs: 7\n")
    code, out, _ = run_cli(
        ["aggregate", str(log), "--json", "--resamples", "1000", "--plan", str(plan)], capsys
    )
    payload = json.loads(out)
    # The gate defaults to the plan's 7: the 6-pair cohort is insufficient, not a win.
    assert payload["gate"] == 7 and payload["exploratory"] is False
    assert payload["cohorts"][0]["status"] == "insufficient"
    # not exploratory (the gate is the plan's), yet no cohort reached it: said apart
    assert len(payload["cohorts"]) == 1 and payload["allBelowGate"] is True
    code, out, _ = run_cli(
        [
            "aggregate",
            str(log),
            "--json",
            "--resamples",
            "1000",
            "--plan",
            str(plan),
            "--min-pairs",
            "5",
        ],
        capsys,
    )
    payload = json.loads(out)
    (cohort,) = payload["cohorts"]
    assert payload["exploratory"] is True and cohort["exploratory"] is True
    total = next(e for e in cohort["effects"] if e["metric"] == "totalTokens")
    assert total["decisionHigh"] < 0 and total["decision"] == "no-evidence"
    assert total["reason"] == "below-gate" and total["win"] is False
    code, text, _ = run_cli(
        ["aggregate", str(log), "--resamples", "1000", "--plan", str(plan), "--min-pairs", "5"],
        capsys,
    )
    assert "EXPLORATORY" in text and "below the pre-registered pairs" in text


def test_json_is_compact_by_default_and_pretty_on_request_with_the_same_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28: ``--json`` is one compact line; ``--pretty`` indents it; both parse to what
    Python's standard encoder writes for the same analysis (the JSON before issue 28)."""
    from pairlab.cli.aggregate import read_episode_log
    from pairlab.core.analysis.cohorts import analyse_cohorts
    from pairlab.core.analysis.study_plan import ResolvedPlan, default_plan

    records = [
        r
        for task in ("t1", "t2")
        for r in cohort_records(7, saving=30, arms=("baseline", "optimizer", "full"), taskId=task)
    ]
    path = tmp_path / "episodes.jsonl"
    path.write_text("\n".join(lines_of(records)) + "\n", encoding="utf-8")
    args = ["aggregate", str(path), "--json", "--resamples", "500", "--min-pairs", "5"]
    code, compact, _ = run_cli(args, capsys)
    assert code == 0 and compact.count("\n") == 1 and compact.startswith('{"schemaVersion":2,')
    code, pretty, _ = run_cli([*args, "--pretty"], capsys)
    assert code == 0 and pretty.startswith('{\n  "schemaVersion": 2,\n')
    plan = ResolvedPlan.of(default_plan(5), "default")
    reference = analyse_cohorts(
        read_episode_log(path), run_id="run-a", min_pairs=5, n_resamples=500, plan=plan
    ).to_json()
    standard = json.loads(json.dumps(reference, indent=2, default=str))
    assert json.loads(compact) == json.loads(pretty) == standard
    assert any(e["ciLow"] is not None for c in standard["cohorts"] for e in c["effects"])


def test_a_log_whose_episodes_are_all_excluded_is_counted_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every episode excluded (pre-registered rules): the cohort is reported insufficient
    with its exclusions counted - nothing lost, no claim (was a polars ComputeError)."""
    records = [r.model_copy(update={"excluded": True}) for r in cohort_records(6)]
    path = tmp_path / "excluded.jsonl"
    path.write_text("\n".join(lines_of(records)) + "\n", encoding="utf-8")
    code, out, _ = run_cli(["aggregate", str(path), "--json", "--resamples", "1000"], capsys)
    assert code == 0
    (cohort,) = json.loads(out)["cohorts"]
    assert cohort["status"] == "insufficient" and cohort["pairs"] == 0
    assert cohort["excluded"] == len(records) and cohort["effects"] == []
    code, out, _ = run_cli(["aggregate", str(path), "--resamples", "1000"], capsys)
    assert code == 0 and f"{len(records)} excluded" in out


def test_an_empty_log_is_an_analysis_of_no_cohort(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n", encoding="utf-8")
    code, out, _ = run_cli(["aggregate", str(path), "--json", "--resamples", "1000"], capsys)
    payload = json.loads(out)
    assert code == 0 and payload["cohorts"] == [] and sum(payload["decisions"].values()) == 0
