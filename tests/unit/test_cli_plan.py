"""`pairlab plan` end to end through the typer app, and the catalog/profiles dir resolution."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pairlab.adapters.paths import catalog_dir, profiles_dir
from pairlab.cli import app, main
from pairlab.core.schemas.catalog import load_suite
from pairlab.core.schemas.episode import ARMS
from tests.support import CATALOG_DIR, PROFILES_DIR, REPO_ROOT

runner = CliRunner()
CORE_TASKS = [t.id for t in load_suite(CATALOG_DIR, "core").tasks]


def invoke_json(*args: str) -> dict[str, object]:
    result = runner.invoke(app, ["plan", *args, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert isinstance(payload, dict)
    return payload


def test_plan_json_shape_and_content() -> None:
    payload = invoke_json(
        "--suite", "core", "--repetitions", "5", "--seed", "7", "--run-id", "r-cli"
    )
    assert list(payload) == ["runId", "seed", "repetitions", "arms", "episodes", "intervention"]
    assert payload["runId"] == "r-cli"
    assert payload["seed"] == 7
    assert payload["repetitions"] == 5
    assert payload["arms"] == list(ARMS)
    episodes = payload["episodes"]
    assert isinstance(episodes, list)
    assert len(episodes) == len(CORE_TASKS) * 5 * len(ARMS)
    first = episodes[0]
    assert list(first) == ["taskId", "repetition", "order", "arm", "pairId", "episodeId"]
    assert {e["taskId"] for e in episodes} == set(CORE_TASKS)
    assert all(e["pairId"] == f"r-cli:{e['taskId']}:{e['repetition']}" for e in episodes)
    assert all(e["episodeId"] == f"{e['pairId']}:{e['arm']}" for e in episodes)
    # same arguments, same schedule
    again = invoke_json("--suite", "core", "--repetitions", "5", "--seed", "7", "--run-id", "r-cli")
    assert again == payload


def test_plan_arms_subset_and_generated_run_id() -> None:
    payload = invoke_json(
        "--suite", "core", "--repetitions", "2", "--seed", "1", "--arms", "baseline,full"
    )
    assert payload["arms"] == ["baseline", "full"]
    run_id = payload["runId"]
    assert isinstance(run_id, str) and run_id.startswith("run-")
    episodes = payload["episodes"]
    assert isinstance(episodes, list)
    assert {e["arm"] for e in episodes} == {"baseline", "full"}
    assert all(e["pairId"].startswith(f"{run_id}:") for e in episodes)
    other = invoke_json(
        "--suite", "core", "--repetitions", "2", "--seed", "1", "--arms", "baseline,full"
    )
    assert other["runId"] != run_id  # two runs never share pair ids


def test_plan_table_names_every_episode() -> None:
    result = runner.invoke(
        app, ["plan", "--suite", "core", "--repetitions", "1", "--seed", "2", "--run-id", "tbl"]
    )
    assert result.exit_code == 0, result.output
    assert "run tbl" in result.stdout and "seed 2" in result.stdout
    for task_id in CORE_TASKS:
        for arm in ARMS:
            assert f"tbl:{task_id}:0:{arm}" in result.stdout


def test_plan_generated_run_id_is_printed_in_the_table() -> None:
    result = runner.invoke(app, ["plan", "--suite", "core", "--repetitions", "1", "--seed", "2"])
    assert result.exit_code == 0, result.output
    assert "(generated)" in result.stdout


def test_catalog_option_and_env_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    custom = tmp_path / "cat"
    shutil.copytree(CATALOG_DIR, custom)
    (custom / "suites" / "tiny.yaml").write_text(
        "schema_version: 1\nid: tiny\ndescription: one task\ntasks: [fix-median]\n"
        "exclusion_rules:\n  - {id: infra, when: infrastructure-failure-before-start, description: never started}\n",
        encoding="utf-8",
    )
    payload = invoke_json(
        "--suite", "tiny", "--repetitions", "1", "--seed", "0", "--catalog", str(custom)
    )
    episodes = payload["episodes"]
    assert isinstance(episodes, list)
    assert {e["taskId"] for e in episodes} == {"fix-median"}

    monkeypatch.setenv("PAIRLAB_CATALOG_DIR", str(custom))
    assert catalog_dir() == custom
    episodes = invoke_json("--suite", "tiny", "--repetitions", "1", "--seed", "0")["episodes"]
    assert isinstance(episodes, list) and len(episodes) == len(ARMS)


def test_default_dirs_are_the_repository_ones(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("PAIRLAB_CATALOG_DIR", raising=False)
    monkeypatch.delenv("PAIRLAB_PROFILES_DIR", raising=False)
    assert catalog_dir() == CATALOG_DIR
    assert profiles_dir() == PROFILES_DIR
    monkeypatch.setenv("PAIRLAB_PROFILES_DIR", str(tmp_path))
    assert profiles_dir() == tmp_path
    assert profiles_dir(REPO_ROOT / "x") == REPO_ROOT / "x"  # an explicit option wins over the env


def test_plan_errors_map_to_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["plan", "--suite", "no-such-suite", "--repetitions", "1", "--seed", "0", "--json"])
    assert info.value.code == 2
    error = json.loads(capsys.readouterr().out)
    assert error["reason_code"] == "not-found"
    assert "no-such-suite" in error["error"]

    with pytest.raises(SystemExit) as info:
        main(
            [
                "plan",
                "--suite",
                "core",
                "--repetitions",
                "1",
                "--seed",
                "0",
                "--arms",
                "baseline,turbo",
            ]
        )
    assert info.value.code == 2
    assert "turbo" in capsys.readouterr().err

    with pytest.raises(SystemExit) as info:
        main(["plan", "--suite", "core", "--repetitions", "0", "--seed", "0"])
    assert info.value.code == 2
