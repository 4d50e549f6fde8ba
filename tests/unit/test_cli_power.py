"""`pairlab power`: pilot sources (episode log, run directory, published run), statuses, JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pairlab.core.analysis.study_plan import ResolvedPlan, StudyPlan, frozen_plan_bytes
from tests.simulated_study import CohortTruth, saving, write_study
from tests.support import cli_exit

EFFECT = {"full": saving(0.6)}  # a large saving: the answer is a handful of pairs (fast)


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    if args[0] == "power":
        args = [*args, "--replicates", "1000"]  # unit tests: a coarser simulation
    code = cli_exit(args)
    return code, capsys.readouterr().out


@pytest.fixture
def pilot(tmp_path: Path) -> Path:
    truths = [CohortTruth("big", effects=EFFECT), CohortTruth("tiny", effects=EFFECT)]
    return write_study(tmp_path / "pilot.jsonl", "pilot", truths, {"big": 40, "tiny": 3})


def by_task(payload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["key"]["taskId"]: c for c in payload["cohorts"]}


def test_an_episode_log_pilot_with_a_cohort_too_small_to_estimate(
    pilot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(
        ["power", str(pilot), "--effect", "40%", "--contrast", "full-vs-baseline", "--json"], capsys
    )
    assert code == 0
    payload = json.loads(out)
    rows = by_task(payload)
    assert rows["tiny"]["status"] == "too-few-pairs" and rows["tiny"]["requiredPairs"] is None
    big = rows["big"]
    assert big["status"] == "ok" and big["pilotPairs"] == 40
    assert big["effect"] == pytest.approx(-0.4 * big["controlMean"])
    assert 3 <= big["requiredPairs"] <= 40 and big["powerAtRequired"] >= 0.8
    # Never fewer pairs than Student's t alone; the sd's 80% interval brackets the answer.
    assert big["requiredPairs"] >= big["studentTPairs"]
    low, high = big["requiredPairsSdInterval80"]
    assert low <= big["requiredPairs"] <= high
    assert payload["preRegister"]["minPairs"] == big["requiredPairs"]
    assert payload["preRegister"]["env"] == f"TOKEN_OPTIMIZER_EVAL_MIN_PAIRS={big['requiredPairs']}"
    assert payload["familySize"] == 3 and payload["alphaPerTest"] == pytest.approx(0.05 / 6)
    # A smaller saving needs more pairs; a higher power too.
    _, smaller = run(
        ["power", str(pilot), "--effect", "20%", "--contrast", "full-vs-baseline", "--json"], capsys
    )
    assert by_task(json.loads(smaller))["big"]["requiredPairs"] > big["requiredPairs"]
    code, text = run(
        ["power", str(pilot), "--effect", "40%", "--contrast", "full-vs-baseline"], capsys
    )
    assert code == 0 and "too-few-pairs" in text
    assert f"pre-register: {big['requiredPairs']} pairs per cohort" in text


def test_no_cohort_estimable_is_inconclusive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_study(tmp_path / "p.jsonl", "p", [CohortTruth("tiny", effects=EFFECT)], 4)
    code, out = run(["power", str(log), "--contrast", "full-vs-baseline", "--json"], capsys)
    assert code == 2
    assert json.loads(out)["preRegister"] is None


def test_a_run_directory_and_its_published_copy_use_the_frozen_plan(
    tmp_path: Path, pilot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pairlab.adapters.store import open_store
    from pairlab.adapters.store.publish import publish_run

    run_dir = tmp_path / "work" / "runs" / "pilot-run"
    run_dir.mkdir(parents=True)
    shutil.copy(pilot, run_dir / "episodes.jsonl")
    plan = StudyPlan(id="one", min_pairs=5, primary_contrasts=["full-vs-baseline"])
    (run_dir / "plan.json").write_bytes(frozen_plan_bytes(ResolvedPlan.of(plan, "file", "x")))
    code, out = run(["power", str(run_dir), "--effect", "40%", "--json"], capsys)
    assert code == 0
    local = json.loads(out)
    assert local["plan"]["id"] == "one" and local["familySize"] == 1  # one primary contrast
    publish_run(run_dir, open_store(str(tmp_path / "store")))
    code, out = run(
        ["power", f"{tmp_path / 'store'}/runs/pilot-run", "--effect", "40%", "--json"], capsys
    )
    assert code == 0
    published = json.loads(out)
    assert published["cohorts"] == local["cohorts"]  # same pilot, same answer (seeds from names)


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--effect", "ten"], "invalid-input"),
        (["--effect", "0%"], "invalid-input"),
        (["--model", "magic"], "invalid-input"),
        (["--metric", "tokens"], "invalid-input"),
    ],
)
def test_bad_options_are_refused(
    pilot: Path, capsys: pytest.CaptureFixture[str], args: list[str], reason: str
) -> None:
    code, out = run(["power", str(pilot), *args, "--json"], capsys)
    assert code == 2 and json.loads(out)["reason_code"] == reason


def test_a_missing_pilot_is_not_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["power", str(tmp_path / "nope"), "--json"], capsys)
    assert code == 2 and json.loads(out)["reason_code"] == "not-found"
