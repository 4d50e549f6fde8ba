"""The eval form's arms default with a third-party-like intervention, through the real flow.

An intervention that supports only the optimizer arm (as ``mcp-server-git`` does; here the
reference server's command under another id, so nothing is installed) runs with the
eval's default arms -- what the Prefect form sends untouched, an empty list -- on the real
Claude Code CLI against the provider emulator the run starts (offline, local backend):

* the flow resolves the default once when it plans: the baseline and the optimizer arm
  ran, nothing was refused, and settings.json, schedule.json and run.json froze that list;
* a resume with the default again goes on with the run's arms (kept from its frozen
  settings, nothing run twice), and one asking for all four is refused
  (``resume-changed``), never widened;
* a new run asking for all four explicitly is refused before anything runs
  (``arm-not-supported``, naming the arms to leave out).

One task, one repetition: two short Claude Code episodes (about 5-10 s each).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flows.evidence_eval import evidence_eval
from flows.params import EvidenceEvalParams
from pairlab.core.emulator.run_settings import EmulatorSettings
from pairlab.core.errors import InvalidInputError, ReasonCode
from tests.e2e import eval_checks as checks
from tests.integration.realcli_harness import require_cli
from tests.support import optimizer_only_manifest

pytestmark = [pytest.mark.prefect, pytest.mark.realcli, pytest.mark.timeout(900)]

RUN_ID = "arms-default"
OPTIMIZER_ONLY = ["baseline", "optimizer"]


def _params(tmp_path: Path, **changes: Any) -> EvidenceEvalParams:
    return EvidenceEvalParams(
        profile="claude",
        intervention=str(optimizer_only_manifest(tmp_path)),
        task_filter=["fix-median"],
        repetitions=1,
        min_pairs=2,
        seed=3,
        store=str(tmp_path / "store"),
        work_dir=str(tmp_path / "work"),
        emulator=EmulatorSettings(wrong_probability=0),
        **changes,
    )


def test_the_default_arms_are_the_interventions_resolved_and_frozen(
    prefect_harness: None, tmp_path: Path
) -> None:
    require_cli("claude")
    work = tmp_path / "work"
    params = _params(tmp_path, run_id=RUN_ID)
    assert params.arms == []  # the form's untouched default
    evidence_eval(params)

    records = checks.load_records(work, RUN_ID)
    assert sorted(r.arm for r in records.values()) == OPTIMIZER_ONLY
    assert {r.intervention_id for r in records.values()} == {"optimizer-only"}
    run = checks.run_path(work, RUN_ID)
    assert json.loads((run / "settings.json").read_text())["arms"] == OPTIMIZER_ONLY
    assert json.loads((run / "schedule.json").read_text())["arms"] == OPTIMIZER_ONLY
    assert json.loads((run / "run.json").read_text())["arms"] == OPTIMIZER_ONLY
    published = tmp_path / "store" / "runs" / RUN_ID
    assert json.loads((published / "report.json").read_text())["meta"]["arms"] == OPTIMIZER_ONLY
    kept = {p: p.read_bytes() for p in run.glob("episodes/*/record.json")}
    assert len(kept) == 2

    # A resume with the default: the run's arms, nothing run again.
    evidence_eval(_params(tmp_path, run_id=RUN_ID))
    assert {p: p.read_bytes() for p in run.glob("episodes/*/record.json")} == kept
    resumes = [json.loads(x) for x in (run / "resumes.jsonl").read_text().splitlines()]
    assert [r["taken_from_run"] for r in resumes] == [["arms"]]
    assert json.loads((run / "settings.json").read_text())["arms"] == OPTIMIZER_ONLY

    # A resume asking for all four: refused, never widened.
    four = ["baseline", "optimizer", "retrieval", "full"]
    with pytest.raises(InvalidInputError) as changed:
        evidence_eval(_params(tmp_path, run_id=RUN_ID, arms=four))
    assert changed.value.reason is ReasonCode.RESUME_CHANGED
    assert "arms (run: " in changed.value.message
    assert {p: p.read_bytes() for p in run.glob("episodes/*/record.json")} == kept

    # A new run asking for them explicitly: refused before anything runs.
    with pytest.raises(InvalidInputError) as refused:
        evidence_eval(_params(tmp_path, run_id="arms-explicit", arms=four))
    assert refused.value.reason is ReasonCode.ARM_NOT_SUPPORTED
    assert "retrieval, full" in refused.value.message and "leave them out" in refused.value.message
    assert not (checks.run_path(work, "arms-explicit") / "settings.json").exists()
