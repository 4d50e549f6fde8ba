"""``--intervention ID|PATH`` on the commands that describe a run: a refused manifest is
exit 2 with its reason code before anything runs; an arm the intervention does not
support is refused; the plan names the intervention; cohorts never pool interventions."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pairlab.adapters.interventions import load_intervention
from pairlab.cli.power import of_intervention
from pairlab.core.analysis.cohorts import analyse_cohorts
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.intervention_wiring import check_same_intervention
from pairlab.core.intervention_wiring import stamp as stamp_of
from pairlab.core.schemas.episode import EpisodeRecord
from tests.support import cli_exit
from tests.unit.test_intervention_manifest import VALID

PLAN = ["plan", "--suite", "core", "--repetitions", "1", "--seed", "0", "--json"]


def _manifest(tmp_path: Path, mutate: Any = None) -> str:
    data = copy.deepcopy(VALID)  # retrieval unsupported
    if mutate is not None:
        mutate(data)
    path = tmp_path / "example-server.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _error(capsys: pytest.CaptureFixture[str], args: list[str]) -> dict[str, Any]:
    assert cli_exit(args) == 2
    error: dict[str, Any] = json.loads(capsys.readouterr().out)
    return error


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda d: d.__setitem__("colour", "red"), "intervention-unknown-field"),
        (lambda d: d.pop("command"), "intervention-missing-command"),
        (
            lambda d: d["install"].__setitem__("pypi", "example-mcp>=0.4"),
            "intervention-unpinned-requirement",
        ),
    ],
)
@pytest.mark.parametrize("command", ["plan", "eval", "power", "certify", "episode"])
def test_a_refused_manifest_is_exit_2_with_its_reason_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mutate: Any, reason: str, command: str
) -> None:
    path = _manifest(tmp_path, mutate)
    args = {
        "plan": PLAN,
        "eval": ["eval", "--profile", "claude", "--work-dir", str(tmp_path / "w"), "--json"],
        "power": ["power", str(tmp_path / "no-pilot.jsonl"), "--json"],
        "certify": ["certify", "--profile", "claude", "--json"],
        "episode": [
            *["episode", "run", "--profile", "claude", "--task", "fix-median"],
            *["--arm", "optimizer", "--out", str(tmp_path / "w"), "--json"],
        ],
    }[command]
    error = _error(capsys, [*args, "--intervention", path])
    assert error["reason_code"] == reason
    assert path in error["error"]
    assert not (tmp_path / "w").exists()  # nothing ran, nothing was written


def test_an_unknown_intervention_id_names_the_shipped_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    error = _error(capsys, [*PLAN, "--intervention", "no-such-server"])
    assert error["reason_code"] == "unknown-intervention"
    assert "reference" in error["error"]


def test_a_plan_asking_for_an_unsupported_arm_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _manifest(tmp_path)
    error = _error(capsys, [*PLAN, "--intervention", path, "--arms", "baseline,retrieval"])
    assert error["reason_code"] == "arm-not-supported"
    assert "retrieval" in error["error"] and "example-server" in error["error"]
    error = _error(
        capsys,
        [
            *["eval", "--profile", "claude", "--arms", "baseline,retrieval", "--json"],
            *["--work-dir", str(tmp_path / "w"), "--intervention", path],
        ],
    )
    assert error["reason_code"] == "arm-not-supported"
    assert not (tmp_path / "w").exists()


def test_a_plan_without_arms_takes_the_baseline_and_the_supported_arms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The eval's default, resolved by the same function (planned_arms): no refusal."""
    assert cli_exit([*PLAN, "--intervention", _manifest(tmp_path)]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["arms"] == ["baseline", "optimizer", "full"]  # retrieval unsupported
    assert {e["arm"] for e in payload["episodes"]} == {"baseline", "optimizer", "full"}


def test_the_plan_names_the_intervention(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _manifest(tmp_path)
    assert cli_exit([*PLAN, "--arms", "baseline,optimizer,full", "--intervention", path]) == 0
    payload = json.loads(capsys.readouterr().out)
    identity = load_intervention(path).identity
    assert payload["intervention"] == identity.to_json()
    assert payload["arms"] == ["baseline", "optimizer", "full"]


def test_the_simulator_refuses_an_intervention_it_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["eval", "--profile", "sim", "--arms", "baseline,optimizer", "--json"]
    error = _error(
        capsys, [*args, "--work-dir", str(tmp_path / "w"), "--intervention", _manifest(tmp_path)]
    )
    assert error["reason_code"] == "arm-not-supported"
    assert "fixed treatment" in error["error"]


def _records(
    intervention: tuple[str, str, str] | None, pairs: int, saving: int
) -> list[EpisodeRecord]:
    records = []
    for pair in range(pairs):
        for arm, tokens in (("baseline", 1000 + 7 * pair), ("optimizer", 1000 + 7 * pair - saving)):
            fields: dict[str, Any] = {}
            if intervention is not None:
                fields = dict(
                    zip(
                        ("intervention_id", "intervention_version", "intervention_manifest_sha256"),
                        intervention,
                        strict=True,
                    )
                )
            records.append(
                EpisodeRecord(
                    episode_id=f"{intervention}-{pair}-{arm}",
                    client="claude",
                    task_id="fix-median",
                    pair_id=f"{intervention}-{pair}",
                    arm=arm,
                    total_tokens=tokens,
                    success=True,
                    correct=True,
                    **fields,
                )
            )
    return records


def test_cohorts_are_never_pooled_across_interventions() -> None:
    a = ("reference", "1.0.0", "a" * 64)
    b = ("code-index", "2.0.1", "b" * 64)
    records = _records(a, 6, 100) + _records(b, 6, 0) + _records(None, 6, 50)
    cohorts = analyse_cohorts(records, run_id="r", min_pairs=5).to_json()["cohorts"]
    keys = sorted(c["key"]["intervention"] for c in cohorts)
    assert keys == ["code-index@2.0.1:bbbbbbbbbbbb", "reference@1.0.0:aaaaaaaaaaaa", "unknown"]
    assert all(c["pairs"] == 6 for c in cohorts)  # each its own six pairs


def test_power_reads_the_pilot_of_one_intervention() -> None:
    a = ("reference", "1.0.0", "a" * 64)
    b = ("code-index", "2.0.1", "b" * 64)
    records = _records(a, 3, 100) + _records(b, 3, 0) + _records(None, 2, 50)
    identity = load_intervention("reference").identity
    wanted = (identity.id, identity.version, identity.manifest_sha256)
    kept = of_intervention(records + _records(wanted, 2, 10), identity)
    assert {r.intervention_id for r in kept} == {None, "reference"}
    assert all(r.intervention_manifest_sha256 in (None, identity.manifest_sha256) for r in kept)
    with pytest.raises(InvalidInputError) as info:
        of_intervention(_records(b, 3, 0), identity)
    assert info.value.reason == ReasonCode.INSUFFICIENT_PILOT
    assert "code-index" in info.value.message


def test_a_resume_with_an_edited_manifest_is_refused() -> None:
    stamp = stamp_of(load_intervention("reference").identity)
    ran = _records(("reference", stamp.version, stamp.manifest_sha256), 2, 10)
    check_same_intervention("r", ran + _records(None, 1, 0), stamp)  # the same: goes on
    edited = _records(("reference", stamp.version, "c" * 64), 1, 10)
    with pytest.raises(InvalidInputError) as info:
        check_same_intervention("r", ran + edited, stamp)
    assert info.value.reason == ReasonCode.RESUME_CHANGED
    assert "cccccccccccc" in info.value.message
