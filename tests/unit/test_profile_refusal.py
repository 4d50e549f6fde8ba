"""A runner profile without a controlled baseline is refused, naming the field (DESIGN 5.2)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.profile import load_profile, parse_profile

VALID: dict[str, Any] = {
    "schema_version": 1,
    "client": "sim",
    "image": "pairlab/simclient:dev",
    "command": ["simclient", "exec", "--format", "claude"],
    "args": ["{prompt}"],
    "arm_args": {"baseline": ["--no-user-config"], "optimizer": [], "retrieval": [], "full": []},
    "baseline_isolation": {
        "description": "fresh empty HOME; user hooks, MCP servers and rules are never copied",
        "fresh_home": True,
        "strips": ["hooks", "mcp_servers", "rules"],
        "probe": "simclient-startup-scan",
    },
    "usage": {"reader": "claude", "paths": [".claude/projects/**/*.jsonl"]},
    "quota": {"probe": "sim"},
    "certification": {"level": "simulator"},
}


def refuse(mutate: Any) -> InvalidInputError:
    data = copy.deepcopy(VALID)
    mutate(data)
    with pytest.raises(InvalidInputError) as info:
        parse_profile(data, "sim.yaml")
    assert info.value.exit_code == 2
    assert info.value.message.startswith("sim.yaml: profile refused")
    return info.value


def test_valid_profile_is_accepted_and_arm_args_go_before_the_prompt() -> None:
    from pathlib import Path

    from pairlab.adapters.backends.base import EpisodeSpec
    from pairlab.adapters.backends.environment import build_argv

    profile = parse_profile(copy.deepcopy(VALID))
    spec = EpisodeSpec(
        run_id="r",
        episode_id="r:t:0:baseline",
        pair_id="r:t:0",
        task_id="t",
        arm="baseline",
        prompt="fix it",
        profile=profile,
        fixture_dir=Path("/nonexistent"),
        timeout_s=10,
    )
    assert build_argv(spec, "/workspace") == [
        "simclient",
        "exec",
        "--format",
        "claude",
        "--no-user-config",
        "fix it",
    ]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["arm_args"].pop("baseline"),
        lambda d: d["arm_args"].__setitem__("baseline", []),
        lambda d: d.pop("arm_args"),
        lambda d: d.__setitem__("arm_args", None),
        # a baseline problem is reported even when another field is also wrong
        lambda d: (d["arm_args"].__setitem__("baseline", []), d.__setitem__("image", 3)),
    ],
    ids=["no-baseline-key", "empty-baseline", "no-arm-args", "null-arm-args", "with-other-error"],
)
def test_missing_baseline_args_is_refused(mutate: Any) -> None:
    error = refuse(mutate)
    assert error.reason == ReasonCode.MISSING_BASELINE_ARGS
    assert "'arm_args.baseline'" in error.message


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.pop("baseline_isolation"), "'baseline_isolation'"),
        (lambda d: d.__setitem__("baseline_isolation", None), "'baseline_isolation'"),
        (lambda d: d["baseline_isolation"].pop("description"), "'baseline_isolation.description'"),
        (
            lambda d: d["baseline_isolation"].__setitem__("description", "tbd"),
            "'baseline_isolation.description'",
        ),
        (
            lambda d: d["baseline_isolation"].__setitem__("strips", []),
            "'baseline_isolation.strips'",
        ),
        (lambda d: d["baseline_isolation"].pop("probe"), "'baseline_isolation.probe'"),
        (lambda d: (d.pop("baseline_isolation"), d.pop("image")), "'baseline_isolation'"),
    ],
    ids=[
        "absent",
        "null",
        "no-description",
        "short-description",
        "no-strips",
        "no-probe",
        "with-other-error",
    ],
)
def test_missing_baseline_isolation_is_refused(mutate: Any, field: str) -> None:
    error = refuse(mutate)
    assert error.reason == ReasonCode.MISSING_BASELINE_ISOLATION
    assert field in error.message


def test_baseline_without_fresh_home_is_refused() -> None:
    error = refuse(lambda d: d["baseline_isolation"].__setitem__("fresh_home", False))
    assert error.reason == ReasonCode.MISSING_BASELINE_ISOLATION
    assert "'baseline_isolation.fresh_home'" in error.message
    assert "fresh HOME" in error.message


def test_other_problems_are_invalid_profile() -> None:
    error = refuse(lambda d: d.__setitem__("hooks_dir", "~/.claude"))
    assert error.reason == ReasonCode.INVALID_PROFILE
    assert "'hooks_dir'" in error.message
    with pytest.raises(InvalidInputError) as info:
        parse_profile(["not", "a", "mapping"])
    assert info.value.reason == ReasonCode.INVALID_PROFILE


def test_profile_file_is_refused_with_its_path(tmp_path: Path) -> None:
    data = copy.deepcopy(VALID)
    del data["baseline_isolation"]
    path = tmp_path / "claude.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(InvalidInputError) as info:
        load_profile(path)
    assert info.value.reason == ReasonCode.MISSING_BASELINE_ISOLATION
    assert str(path) in info.value.message
    path.write_text("client: [unclosed", encoding="utf-8")
    with pytest.raises(InvalidInputError) as info:
        load_profile(path)
    assert info.value.reason == ReasonCode.INPUT_READ_FAILED
