"""Evidence validity through the real aggregation path (slow; runs in CI).

Simulated episode logs with a known ground truth (:mod:`tests.simulated_study`) are
analysed by ``pairlab aggregate --json`` - the code a run's flow uses - and the
decisions are counted:

* under a true null (no arm changes anything, every episode correct so that
  correctness never blocks a win), the expected number of false wins per cohort
  over all its metrics and contrasts is at most 0.05, and the false-win rate per
  primary test at most 2.5%;
* ``pairlab power`` on a pilot suggests a number of pairs; a fresh study of that
  size with the planted saving, pre-registered in a plan, is decided a primary win
  at the target power within 5 percentage points.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.simulated_study import CohortTruth, saving, write_study
from tests.support import cli_exit

TARGET_POWER = 0.8
STUDIES = 600  # fresh studies per cohort type: the achieved power's standard error is ~1.6 points


def run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    capsys.readouterr()
    code = cli_exit([*args, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    return json.loads(out)


@pytest.mark.slow
@pytest.mark.parametrize(("pairs", "cohorts"), [(5, 1000), (8, 1200), (20, 800)])
def test_a_true_null_gives_at_most_005_false_wins_per_cohort(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pairs: int, cohorts: int
) -> None:
    truths = [CohortTruth(f"null-{i}", level=float(10_000 + 97 * i)) for i in range(cohorts)]
    log = write_study(tmp_path / "episodes.jsonl", f"null-{pairs}", truths, pairs)
    analysis = run_json(["aggregate", str(log)], capsys)
    per_cohort, primary_tests, primary_wins, secondary_wins = [], 0, 0, 0
    for cohort in analysis["cohorts"]:
        assert cohort["status"] == "ok" and not cohort["exploratory"]
        wins = [e for e in cohort["effects"] if e["win"]]
        per_cohort.append(len(wins))
        primary_tests += sum(1 for e in cohort["effects"] if e["role"] == "primary")
        primary_wins += sum(1 for e in wins if e["decision"] == "primary-win")
        secondary_wins += sum(1 for e in wins if e["decision"] == "secondary-win")
    mean = float(np.mean(per_cohort))
    se = float(np.std(per_cohort, ddof=1) / np.sqrt(len(per_cohort)))
    rate = primary_wins / primary_tests
    with capsys.disabled():
        print(
            f"\n{pairs} pairs x {cohorts} cohorts (true null): {mean:.4f} false wins per cohort "
            f"(se {se:.4f}; primary {primary_wins}, secondary {secondary_wins}); "
            f"false-win rate per primary test {rate:.4f} of {primary_tests}"
        )
    assert mean <= 0.05
    assert rate <= 0.025
    assert analysis["decisions"]["primary-win"] == primary_wins


@pytest.mark.slow
def test_power_suggestion_and_preregistered_power_are_met_by_a_fresh_study(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    effect = {"full": saving(0.8)}  # the intervention saves 20% of every token dimension
    truths = {
        "calm": CohortTruth("calm", episode_sigma=0.15, effects=effect),
        "noisy": CohortTruth("noisy", level=50_000.0, episode_sigma=0.22, effects=effect),
    }
    # A pilot large enough that its sd is known to ~4% (the tool's 80% interval shows the rest).
    pilot = write_study(tmp_path / "pilot.jsonl", "pilot", list(truths.values()), 300)
    found = run_json(
        [
            "power",
            str(pilot),
            "--effect",
            "20%",
            "--power",
            str(TARGET_POWER),
            "--contrast",
            "full-vs-baseline",
        ],
        capsys,
    )
    suggested = {c["key"]["taskId"]: c["requiredPairs"] for c in found["cohorts"]}
    assert found["preRegister"]["minPairs"] == max(suggested.values())
    assert found["familySize"] == 3  # the default plan's three primary contrasts
    achieved_of: dict[str, float] = {}
    for name, truth in truths.items():
        n = suggested[name]
        plan = tmp_path / f"{name}.plan.yaml"
        plan.write_text(
            f"schema_version: 1\nid: {name}\nmin_pairs: {n}\n"
            f"power: {{effect: '-20%', power: {TARGET_POWER}, pilot: pilot}}\n"
        )
        studies = [
            CohortTruth(
                f"{name}-{i}", level=truth.level, episode_sigma=truth.episode_sigma, effects=effect
            )
            for i in range(STUDIES)
        ]
        log = write_study(tmp_path / f"{name}.jsonl", f"fresh-{name}", studies, n)
        analysis = run_json(["aggregate", str(log), "--plan", str(plan)], capsys)
        decided = [
            e["decision"]
            for c in analysis["cohorts"]
            for e in c["effects"]
            if (e["treatment"], e["control"], e["metric"]) == ("full", "baseline", "totalTokens")
        ]
        assert len(decided) == STUDIES
        achieved_of[name] = decided.count("primary-win") / len(decided)
    with capsys.disabled():
        for name, achieved in achieved_of.items():
            print(
                f"\n{name}: pilot suggests {suggested[name]} pairs; fresh study of that size: "
                f"primary-win rate {achieved:.3f} (target {TARGET_POWER})"
            )
    for achieved in achieved_of.values():
        assert abs(achieved - TARGET_POWER) <= 0.05
