"""A budget ceiling that holds (issue 27, item 5): `pairlab eval --profile sim --budget-tokens N`.

Concurrency 2. On the embedded engine (the session's Prefect harness), through the command line's own
entry point: a ceiling that a simulated pair (two episodes of roughly 15-30k billed tokens)
crosses stops the run after its first pair with exit 4, ``budget-exhausted``, the flow run
Cancelled with the message that says how to resume, and run.json/report saying where it
stopped; the partial run is published. A resume with a lower ceiling stops at once (nothing
runs); a resume with a raised ceiling completes the plan with every episode exactly once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import cli_exit

RUN_ID = "budget-1"
PLANNED = 6  # 1 task x 3 repetitions x 2 arms
# Two pairs at a time, but before any usage is known the first pair runs alone (the second
# waits). It spends s > 30k (two episodes of > 15k), and the next pair is estimated at twice
# its larger episode (>= s): s + next >= 2 s > 60k, so only the first pair runs.
CEILING = 60_000


def _argv(tmp_path: Path, ceiling: int) -> list[str]:
    return [
        "eval", "--profile", "sim", "--task", "fix-median", "--repetitions", "3",
        "--arms", "baseline,optimizer", "--min-pairs", "2", "--concurrency", "2", "--run-id", RUN_ID,
        "--work-dir", str(tmp_path / "work"), "--store", str(tmp_path / "store"),
        "--budget-tokens", str(ceiling), "--json",
    ]  # fmt: skip


def _last_json(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    out = capsys.readouterr().out
    start = out.rindex("\n{") + 1 if "\n{" in out else out.index("{")
    return dict(json.loads(out[start:]))


def _flow_run_state(name: str) -> tuple[str, str | None]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName
    from prefect.client.schemas.sorting import FlowRunSort

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])),
            sort=FlowRunSort.EXPECTED_START_TIME_DESC,
        )
    assert runs, f"no flow run named {name}"
    state = runs[0].state
    assert state is not None
    return str(state.type.value), state.message


def _published_ids(tmp_path: Path) -> list[str]:
    log = tmp_path / "store" / "runs" / RUN_ID / "episodes.jsonl"
    return [json.loads(line)["episodeId"] for line in log.read_text().splitlines()]


@pytest.mark.prefect
@pytest.mark.e2e
def test_the_ceiling_stops_the_run_and_a_raised_one_completes_it(
    prefect_harness: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the command sets Prefect's logging variables for its process: not for the test session
    monkeypatch.setattr("pairlab.cli.run._quiet_prefect", lambda *_: None)
    run = tmp_path / "work" / "runs" / RUN_ID

    assert cli_exit(_argv(tmp_path, CEILING)) == 4
    stopped = _last_json(capsys)
    assert stopped["reason_code"] == "budget-exhausted" and stopped["exit_code"] == 4
    assert stopped["error"] == (
        f"budget-exhausted: resume with Run Id {RUN_ID} and a higher ceiling: "
        + f"{stopped['budget']['spent_tokens']} of {CEILING} billed tokens spent, "  # type: ignore[index]
        + f"2 of {PLANNED} episodes recorded; the partial report is published"
    )
    assert _flow_run_state(RUN_ID) == (
        "CANCELLED",
        f"budget-exhausted: resume with Run Id {RUN_ID} and a higher ceiling",
    )
    records = {p.parent.name: p.read_bytes() for p in run.glob("episodes/*/record.json")}
    assert len(records) == 2
    spent = sum(json.loads(b)["totalTokens"] for b in records.values())
    budget = json.loads((run / "run.json").read_text())["budget"]
    assert budget == {
        "ceiling_tokens": CEILING,
        "spent_tokens": spent,
        "unmeasured_episodes": 0,
        "stopped_at_ceiling": True,
        "episodes_recorded": 2,
        "episodes_planned": PLANNED,
    }
    report = (tmp_path / "store" / "runs" / RUN_ID / "report.md").read_text()
    assert f"STOPPED AT THE BUDGET CEILING (budget-exhausted): {spent} of {CEILING}" in report
    assert len(_published_ids(tmp_path)) == 2  # the partial run is published
    assert (tmp_path / "store" / "runs" / RUN_ID / "manifest.json").exists()

    # a lower ceiling, already crossed: stops at once, nothing runs
    assert cli_exit(_argv(tmp_path, 1_000)) == 4
    assert _last_json(capsys)["reason_code"] == "budget-exhausted"
    assert {p.parent.name: p.read_bytes() for p in run.glob("episodes/*/record.json")} == records

    # a raised ceiling: the rest of the plan, each episode once, the first two untouched
    assert cli_exit(_argv(tmp_path, 10_000_000)) == 0
    done = _last_json(capsys)
    assert done["episodes"] == PLANNED
    after = {p.parent.name: p.read_bytes() for p in run.glob("episodes/*/record.json")}
    assert len(after) == PLANNED and {k: after[k] for k in records} == records
    planned = [e["episode_id"] for e in json.loads((run / "schedule.json").read_text())["entries"]]
    published = _published_ids(tmp_path)
    assert sorted(published) == sorted(planned) and len(set(published)) == PLANNED
    assert _flow_run_state(RUN_ID)[0] == "COMPLETED"
    finished = json.loads((run / "run.json").read_text())["budget"]
    assert finished["stopped_at_ceiling"] is False and finished["ceiling_tokens"] == 10_000_000
    resumes = [json.loads(line) for line in (run / "resumes.jsonl").read_text().splitlines()]
    assert [r["changed"]["budget_tokens"]["now"] for r in resumes] == [1_000, 10_000_000]
