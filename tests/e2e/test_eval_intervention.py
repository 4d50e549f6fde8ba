"""The intervention through the real flow: its id, version and manifest hash in every
episode record, in run.json, in manifest.json and in the cohort key; the report names it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.evidence_eval import evidence_eval
from flows.params import EvidenceEvalParams
from pairlab.adapters.interventions import load_intervention


@pytest.mark.prefect
@pytest.mark.e2e
def test_the_run_records_and_names_its_intervention(prefect_harness: None, tmp_path: Path) -> None:
    params = EvidenceEvalParams.model_validate(
        {
            "run_id": "iv-1",
            "arms": ["baseline", "optimizer"],
            "task_filter": ["fix-median"],
            "repetitions": 2,
            "seed": 3,
            "store": str(tmp_path / "store"),
            "work_dir": str(tmp_path / "work"),
        }
    )
    assert params.intervention == "reference"
    evidence_eval(params)
    identity = load_intervention("reference").identity
    run = tmp_path / "store/runs/iv-1"
    records = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert len(records) == 4
    for record in records:  # the baseline's too: the pair it belongs to
        assert record["interventionId"] == "reference"
        assert record["interventionVersion"] == identity.version
        assert record["interventionManifestSha256"] == identity.manifest_sha256
    stamp = {
        "id": "reference",
        "version": identity.version,
        "manifest_sha256": identity.manifest_sha256,
    }
    assert json.loads((run / "manifest.json").read_text())["intervention"] == stamp
    assert json.loads((run / "run.json").read_text())["intervention"] == stamp
    report = json.loads((run / "report.json").read_text())
    key = f"reference@{identity.version}:{identity.manifest_sha256[:12]}"
    assert [c["key"]["intervention"] for c in report["analysis"]["cohorts"]] == [key]
    assert [g["intervention"] for g in report["headline"]["groups"]] == [key]
    markdown = (run / "report.md").read_text()
    assert (
        f"intervention reference {identity.version} (manifest {identity.manifest_sha256[:12]})"
        in markdown
    )
    assert f"· intervention {key} —" in markdown  # the headline's group title
    assert f"intervention reference {identity.version}" in (run / "report.html").read_text()
