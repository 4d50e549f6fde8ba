"""Pre-registration through the real flow: the plan is frozen when the run starts,
hashed into the manifest, and a resumed run whose plan changed is refused (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flows.evidence_eval import evidence_eval
from flows.params import EvidenceEvalParams
from pairlab.core.analysis.study_plan import StudyPlan
from pairlab.core.errors import InvalidInputError, ReasonCode
from tests.support import CATALOG_DIR, cli_exit

PLAN = """\
schema_version: 1
id: tiny
alpha: 0.05
min_pairs: 2
primary_contrasts: [optimizer-vs-baseline]
secondary_metrics: [outputTokens, latencyMs]
"""


def _params(tmp_path: Path, run_id: str, **extra: object) -> EvidenceEvalParams:
    return EvidenceEvalParams.model_validate(
        {
            "run_id": run_id,
            "arms": ["baseline", "optimizer"],
            "task_filter": ["fix-median"],
            "repetitions": 2,
            "seed": 4,
            "store": str(tmp_path / "store"),
            "work_dir": str(tmp_path / "work"),
            **extra,
        }
    )


@pytest.mark.prefect
@pytest.mark.e2e
def test_plan_is_frozen_hashed_and_a_changed_plan_refuses_the_resume(
    prefect_harness: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan_file = tmp_path / "tiny.plan.yaml"
    plan_file.write_text(PLAN)
    evidence_eval(_params(tmp_path, "plan-1", study_plan=str(plan_file)))

    frozen = json.loads((tmp_path / "work/runs/plan-1/plan.json").read_text())
    expected = StudyPlan.model_validate(frozen["plan"]).sha256()
    assert frozen["sha256"] == expected and frozen["plan"]["id"] == "tiny"
    manifest = json.loads((tmp_path / "store/runs/plan-1/manifest.json").read_text())
    assert manifest["study_plan"]["sha256"] == expected
    assert manifest["study_plan"]["id"] == "tiny" and manifest["study_plan"]["source"] == "file"
    report = json.loads((tmp_path / "store/runs/plan-1/report.json").read_text())
    assert report["analysis"]["plan"]["sha256"] == expected
    assert report["analysis"]["gate"] == 2 and report["analysis"]["exploratory"] is False
    roles = {
        (e["treatment"], e["metric"]): e["role"]
        for c in report["analysis"]["cohorts"]
        for e in c["effects"]
    }
    assert roles[("optimizer", "totalTokens")] == "primary"
    assert roles[("optimizer", "latencyMs")] == "secondary"
    assert roles[("optimizer", "toolCalls")] == "descriptive"

    # Resuming with the same plan is fine (nothing to run: every episode is recorded).
    evidence_eval(_params(tmp_path, "plan-1", study_plan=str(plan_file)))
    # The plan changes after the run started: refused before anything runs.
    plan_file.write_text(PLAN.replace("min_pairs: 2", "min_pairs: 3"))
    with pytest.raises(InvalidInputError) as info:
        evidence_eval(_params(tmp_path, "plan-1", study_plan=str(plan_file)))
    assert info.value.reason == ReasonCode.PLAN_CHANGED and "min_pairs" in info.value.message
    # The same through the CLI: exit 2 with the reason code.
    argv = ["eval", "--run-id", "plan-1", "--plan", str(plan_file), "--task", "fix-median"]
    argv += ["--arms", "baseline,optimizer", "--repetitions", "2", "--seed", "4"]
    argv += ["--work-dir", str(tmp_path / "work"), "--store", str(tmp_path / "store"), "--json"]
    capsys.readouterr()
    assert cli_exit(argv) == 2
    out = json.loads(capsys.readouterr().out)
    assert out["reason_code"] == "plan-changed" and "plan-1" in out["error"]


@pytest.mark.prefect
@pytest.mark.e2e
def test_a_suite_plan_beside_the_suite_is_used_and_a_lower_gate_is_exploratory(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, catalog)
    (catalog / "suites/core.plan.yaml").write_text(PLAN.replace("min_pairs: 2", "min_pairs: 3"))
    monkeypatch.setenv("PAIRLAB_CATALOG_DIR", str(catalog))
    monkeypatch.delenv("TOKEN_OPTIMIZER_EVAL_MIN_PAIRS", raising=False)
    evidence_eval(_params(tmp_path, "plan-2", min_pairs=2))
    frozen = json.loads((tmp_path / "work/runs/plan-2/plan.json").read_text())
    assert frozen["source"] == "file" and frozen["plan"]["min_pairs"] == 3
    report = json.loads((tmp_path / "store/runs/plan-2/report.json").read_text())
    analysis = report["analysis"]
    assert analysis["gate"] == 2 and analysis["exploratory"] is True
    assert report["meta"]["exploratory"] is True
    (cohort,) = analysis["cohorts"]
    assert cohort["status"] == "ok" and cohort["exploratory"] is True
    # Two pairs are below the three pre-registered: nothing is a win, whatever the interval.
    assert not any(e["win"] for e in cohort["effects"])
    md = (tmp_path / "store/runs/plan-2/report.md").read_text()
    assert "Exploratory analysis" in md and "EXPLORATORY" in md
    # Removing the suite plan changes the plan of this run: refused.
    (catalog / "suites/core.plan.yaml").unlink()
    with pytest.raises(InvalidInputError) as info:
        evidence_eval(_params(tmp_path, "plan-2", min_pairs=2))
    assert info.value.reason == ReasonCode.PLAN_CHANGED
