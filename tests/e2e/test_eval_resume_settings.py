"""A resume never changes a run (issue 29): through the real flow, on the embedded engine.

A 2-task run finishes; resumed with the command line's untouched defaults (every task,
5 repetitions, no arms: the default) it goes on with its frozen settings and drops nothing; a
resume that asks for fewer repetitions is refused naming the field; a run whose
settings file is gone is still refused when its plan would drop recorded episodes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.evidence_eval import evidence_eval
from flows.params import EvidenceEvalParams
from pairlab.core.errors import InvalidInputError, ReasonCode

RUN_ID = "frozen-1"


def _params(tmp_path: Path, **given: object) -> EvidenceEvalParams:
    where = {"store": str(tmp_path / "store"), "work_dir": str(tmp_path / "work")}
    return EvidenceEvalParams.model_validate({"run_id": RUN_ID, **where, **given})


@pytest.mark.prefect
@pytest.mark.e2e
def test_a_resume_keeps_the_runs_settings_and_drops_nothing(
    prefect_harness: None, tmp_path: Path
) -> None:
    first = evidence_eval(
        _params(
            tmp_path,
            task_filter=["fix-median", "answer-cache-env"],
            repetitions=2,
            arms=["baseline", "optimizer"],
            min_pairs=2,
        )
    )
    assert first["episodes"] == 8
    run = tmp_path / "work" / "runs" / RUN_ID
    frozen = json.loads((run / "settings.json").read_text())
    assert frozen["task_filter"] == ["fix-median", "answer-cache-env"]
    assert frozen["repetitions"] == 2
    records = sorted(p.read_bytes() for p in run.glob("episodes/*/record.json"))

    # untouched defaults (7 tasks, 5 repetitions, the default arms) and a new concurrency
    again = evidence_eval(_params(tmp_path, concurrency=3))
    assert again["episodes"] == 8  # the same run: nothing dropped, nothing added
    assert sorted(p.read_bytes() for p in run.glob("episodes/*/record.json")) == records
    published = (tmp_path / "store" / "runs" / RUN_ID / "episodes.jsonl").read_text()
    assert len(published.splitlines()) == 8
    (resume,) = [json.loads(line) for line in (run / "resumes.jsonl").read_text().splitlines()]
    assert {"task_filter", "repetitions", "arms", "min_pairs"} <= set(resume["taken_from_run"])
    assert resume["changed"] == {"concurrency": {"run": 1, "now": 3}}

    with pytest.raises(InvalidInputError) as refused:
        evidence_eval(_params(tmp_path, repetitions=1))
    assert refused.value.reason == ReasonCode.RESUME_CHANGED
    assert "repetitions (run: 2, asked: 1)" in refused.value.message

    # without its settings file (a run from before settings.json), a narrower plan is refused
    (run / "settings.json").unlink()
    with pytest.raises(InvalidInputError) as dropped:
        evidence_eval(
            _params(
                tmp_path,
                task_filter=["fix-median"],
                repetitions=2,
                arms=["baseline", "optimizer"],
                min_pairs=2,
            )
        )
    assert dropped.value.reason == ReasonCode.RESUME_DROPS_EPISODES
    assert "leaves out 4 recorded episode(s)" in dropped.value.message
    assert sorted(p.read_bytes() for p in run.glob("episodes/*/record.json")) == records
