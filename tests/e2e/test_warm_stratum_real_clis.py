"""Claim 4 through the real CLIs (issue 18): a warm-stratum eval of ``claims-warm``.

The harvest session (``harvest-pipeline-map``, full arm) records two findings with the
real CLI's ``wiki_write`` call; their graph is frozen and hashed into the run; the other
tasks run in a cold and a warm stratum planned together. Checked:

* the frozen graph's hash is recorded, and every warm retrieval episode started from
  exactly it (its collected graph begins with the frozen bytes); cold ones never;
* cold and warm are separate cohorts everywhere (the cohort analysis, the claim-2 and
  the across-sessions sections), each with its own pairs -- never pooled;
* same project: the warm stratum's retrieval arm needs fewer turns than its optimizer
  pair (interval below zero); the cold stratum shows no such saving. Another project:
  the organization-scoped finding is delivered (stale: its README anchor differs) and
  listed as stale when delivered; the project-scoped one is not offered there.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from flows.params import WarmStratumParams
from pairlab.core.emulator.run_settings import EmulatorSettings
from tests.e2e import eval_checks as checks
from tests.e2e.test_real_cli_eval import run_eval

pytestmark = [pytest.mark.prefect, pytest.mark.e2e, pytest.mark.realcli, pytest.mark.timeout(1800)]
REPS = 3
ARMS = ["baseline", "optimizer", "retrieval"]


def _cohorts(section: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["key"]["taskId"], c["key"]["stratum"]): c for c in section["cohorts"]}


@pytest.mark.parametrize("profile", ["claude", "codex"])
def test_a_harvested_finding_is_reused_later_cold_and_warm_never_pooled(
    prefect_harness: None, tmp_path: Path, profile: str
) -> None:
    run_id = f"warm-{profile}"
    work, _ = run_eval(
        tmp_path,
        profile,
        "local",
        suite="claims-warm",
        arms=ARMS,
        repetitions=REPS,
        seed=5,
        run_id_override=run_id,
        holdout_share=0.0,
        warm=WarmStratumParams(harvest_task="harvest-pipeline-map"),
        emulator=EmulatorSettings(wrong_probability=0.0),
    )
    run = checks.run_path(work, run_id)
    warm = json.loads((run / "warm.json").read_text())
    frozen = (run / "warm-graph.jsonl").read_bytes()
    assert warm["graphSha256"] == hashlib.sha256(frozen).hexdigest()
    assert len(warm["harvestedFindingIds"]) == 2 and warm["harvestCorrect"] is True
    records = checks.load_records(work, run_id)
    assert len(records) == 2 * 2 * REPS * len(ARMS)  # 2 tasks x 2 strata, harvest not a pair
    assert {r.stratum for r in records.values()} == {"cold", "warm"}
    dirs = checks.episode_dirs(work, run_id)
    for eid, r in records.items():
        graph = dirs[eid] / "collected" / "graph" / "findings.jsonl"
        carried = graph.is_file() and graph.read_bytes().startswith(frozen)
        assert carried is (r.stratum == "warm" and r.arm == "retrieval"), eid
        if r.stratum == "cold":
            assert r.finding_ids == [], eid  # these tasks plant nothing of their own
    report = json.loads((run / "report.json").read_text())
    strata = {(c["key"]["taskId"], c["key"]["stratum"]) for c in report["analysis"]["cohorts"]}
    assert strata == {
        (t, s) for t in ("warm-legacy-caller", "warm-cross-orders") for s in ("cold", "warm")
    }
    across = _cohorts(report["acrossSessions"])
    assert all(c["pairs"] == REPS for c in across.values())  # each stratum its own pairs
    same_warm = across[("warm-legacy-caller", "warm")]["metrics"]["apiCalls"]
    same_cold = across[("warm-legacy-caller", "cold")]["metrics"]["apiCalls"]
    assert same_warm["high"] < 0, same_warm
    assert same_cold["estimate"] >= 0, same_cold
    project, org = warm["harvestedFindingIds"]
    assert across[("warm-legacy-caller", "warm")]["deliveredFindings"] == [project]
    assert across[("warm-cross-orders", "warm")]["deliveredFindings"] == [org]
    cross_warm = across[("warm-cross-orders", "warm")]["metrics"]["apiCalls"]
    assert cross_warm["high"] < 0, cross_warm
    stale = _cohorts(report["retrievalEvidence"])[("warm-cross-orders", "warm")]
    assert {f for s in stale["staleWhenDelivered"] for f in s["findingIds"]} == {org}
    print(f"{profile}: same project warm {same_warm} cold {same_cold}; other project {cross_warm}")
