"""The claude and codex runner profiles: the measured flags, the intervention wired through
each CLI's own flags, the emulator placeholder, certification levels (DESIGN 5.2, issue 14)."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from pairlab.adapters.backends.base import EpisodeSpec
from pairlab.adapters.backends.environment import (
    EPISODE_TMP_SUBDIR,
    EpisodePaths,
    build_argv,
    build_env,
    seed_home,
)
from pairlab.adapters.emulator.server import EpisodeHandle
from pairlab.adapters.interventions import load_intervention
from pairlab.adapters.profiles import load_named_profile, scan_profiles
from pairlab.core.errors import ExecutionError, InvalidInputError, ReasonCode
from pairlab.core.schemas.profile import RunnerProfile, parse_profile, without_run
from tests.intervention_wiring import (
    EMPTY_CLAUDE_MCP_CONFIG,
    claude_arm_args,
    codex_arm_args,
)
from tests.support import PROFILES_DIR

TREATED = ("optimizer", "retrieval", "full")


def spec_for(profile: RunnerProfile, arm: str, endpoint_url: str | None) -> EpisodeSpec:
    return EpisodeSpec(
        run_id="r",
        episode_id=f"r:t:0:{arm}",
        pair_id="r:t:0",
        task_id="t",
        arm=arm,
        prompt="fix it",
        profile=profile,
        fixture_dir=Path("/nonexistent"),
        timeout_s=10,
        model=profile.model,
        endpoint_url=endpoint_url,
    )


PATHS = EpisodePaths(
    workspace_root="/w",
    workdir="/w",
    home="/h",
    graph="/g",
    state="/s",
    solution=None,
    account=None,
)


def test_certification_levels_of_every_profile() -> None:
    levels = {f.name: f.profile.certification for f in scan_profiles() if f.profile}
    assert {n: c.level for n, c in levels.items()} == {
        "claude": "live-local",
        "codex": "live-local",
        "sim": "simulator",
        "sim-codex": "simulator",
        "gemini": "unavailable",
        "copilot": "unavailable",
    }
    for name in ("gemini", "copilot"):
        reason = levels[name].reason or ""
        assert reason.startswith("npm-only") and "npm registry is not reachable" in reason


def test_an_unavailable_profile_must_say_why() -> None:
    data = yaml.safe_load((PROFILES_DIR / "gemini.yaml").read_text())
    data["certification"] = {"level": "unavailable"}
    with pytest.raises(InvalidInputError, match="must say why"):
        parse_profile(data, "gemini.yaml")


def test_claude_arms_differ_by_the_intervention_alone() -> None:
    profile = load_named_profile("claude")
    isolation = ["--setting-sources", "", "--strict-mcp-config", "--mcp-config"]
    assert profile.arm_args["baseline"] == [*isolation, EMPTY_CLAUDE_MCP_CONFIG]
    for arm in TREATED:  # the intervention_wiring rendering, verbatim
        assert profile.arm_args[arm] == ["--setting-sources", "", *claude_arm_args()]
    # the treated arms add only the intervention's own environment (its manifest's env)
    # and its startup timeout (Claude Code's MCP_TIMEOUT, ms)
    assert profile.treatment.home_seed is None
    manifest = load_intervention("reference").manifest
    assert profile.treatment.env == {
        "MCP_TIMEOUT": str(manifest.startup_timeout_s * 1000),
        **manifest.env,
    }
    assert profile.root_env == {"IS_SANDBOX": "1"}
    assert profile.env["CLAUDE_CODE_TMPDIR"] == profile.env["TMPDIR"] == "{tmp}"
    assert profile.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert profile.model == "claude-sonnet-5" and profile.endpoint == "emulator"


def test_codex_arms_differ_by_the_intervention_alone() -> None:
    profile = load_named_profile("codex")
    assert profile.command == ["codex", "exec"]  # every -c follows `exec`
    baseline = profile.arm_args["baseline"]
    assert baseline == [
        "--ignore-user-config",
        "--ignore-rules",
        "-c",
        "project_doc_max_bytes=0",
        "-c",
        "skills.include_instructions=false",
    ]
    for arm in TREATED:
        assert profile.arm_args[arm] == [*baseline, *codex_arm_args()]
    assert {"--disable", "plugins", "unbounded_connection_retries"} <= set(profile.args)
    assert profile.treatment.home_seed is None


@pytest.mark.parametrize("name", ["claude", "codex"])
def test_declared_isolation_flags_are_in_the_baseline(name: str) -> None:
    profile = load_named_profile(name)
    assert profile.baseline_isolation.flags
    for flag in profile.baseline_isolation.flags:
        shorter = without_run(profile.arm_args["baseline"], flag.args)
        assert len(shorter) == len(profile.arm_args["baseline"]) - len(flag.args)


def test_a_declared_flag_missing_from_the_baseline_is_refused() -> None:
    data: dict[str, Any] = yaml.safe_load((PROFILES_DIR / "codex.yaml").read_text())
    bad = copy.deepcopy(data)
    bad["arm_args"]["baseline"].remove("--ignore-rules")
    with pytest.raises(InvalidInputError) as info:
        parse_profile(bad, "codex.yaml")
    assert info.value.reason == ReasonCode.MISSING_BASELINE_ISOLATION
    assert "--ignore-rules is not in arm_args.baseline" in info.value.message


def test_the_codex_provider_override_points_at_the_episode() -> None:
    profile = load_named_profile("codex")
    url = "http://emulator:8080/e/ep-1"
    argv = build_argv(spec_for(profile, "optimizer", url), "/w")
    handle = EpisodeHandle(token="ep-1", ledger_path=Path("x"), server_url="http://emulator:8080")
    provider = handle.codex_args()  # the emulator's own rendering of the same override
    assert argv[argv.index(provider[1]) - 1] == "-c"
    assert provider[3] in argv and f'base_url="{url}/v1"' in provider[3]
    assert argv[-3:] == ["-m", "gpt-5.5", "fix it"]
    mcp = argv.index(codex_arm_args()[1])
    assert argv.index("exec") < mcp < argv.index("fix it")


def test_claude_env_points_at_the_episode_and_declares_a_sandbox_only_as_root() -> None:
    profile = load_named_profile("claude")
    spec = spec_for(profile, "baseline", "http://127.0.0.1:9/e/ep-2")
    env, secrets = build_env(spec, PATHS, {"CLAUDE_CODE_OAUTH_TOKEN": "dummy", "HOME": "/real"})
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9/e/ep-2"
    assert env["TMPDIR"] == f"/h/{EPISODE_TMP_SUBDIR}" and env["HOME"] == "/h"
    assert "IS_SANDBOX" not in env and secrets == {"CLAUDE_CODE_OAUTH_TOKEN": "dummy"}
    as_root, _ = build_env(spec, PATHS, {}, as_root=True)
    assert as_root["IS_SANDBOX"] == "1"
    argv = build_argv(spec, "/w")
    assert argv[:2] == ["claude", "-p"] and argv[-1] == "fix it"
    assert argv[argv.index("--model") + 1] == "claude-sonnet-5"


def test_an_emulator_profile_without_an_endpoint_is_a_clear_error() -> None:
    spec = spec_for(load_named_profile("claude"), "baseline", None)
    with pytest.raises(ExecutionError, match="run it with `pairlab eval`"):
        build_env(spec, PATHS, {})
    with pytest.raises(ExecutionError, match="provider emulator"):
        build_argv(spec_for(load_named_profile("codex"), "baseline", None), "/w")


def test_the_episode_tmp_dir_exists_in_a_fresh_home(tmp_path: Path) -> None:
    seed_home(spec_for(load_named_profile("claude"), "optimizer", "http://x"), tmp_path)
    assert (tmp_path / EPISODE_TMP_SUBDIR).is_dir()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != EPISODE_TMP_SUBDIR) == [
        ".claude",
        ".codex",
        ".copilot",
        ".gemini",
    ]


def test_local_episodes_as_root_get_the_root_env(tmp_path: Path) -> None:
    from pairlab.adapters.backends.local import LocalBackend

    fixture = tmp_path / "fixture"
    fixture.mkdir()
    profile = load_named_profile("claude")
    spec = spec_for(profile, "baseline", "http://127.0.0.1:9/e/x").model_copy(
        update={"fixture_dir": fixture}
    )
    backend = LocalBackend(base_dir=tmp_path / "eps", host_env={}, clean_orphans=False)
    prepared = backend.prepare(spec)
    try:
        assert ("IS_SANDBOX" in prepared.env) is (os.geteuid() == 0)
        assert Path(prepared.env["TMPDIR"]).is_dir()
    finally:
        backend.cleanup(prepared)


def test_canary_trials_refuse_an_emulator_profile_without_an_account() -> None:
    from flows.canary.manifest import canary_profile

    with pytest.raises(InvalidInputError, match="runs on a registered account") as refused:
        canary_profile(load_named_profile("claude"))
    assert refused.value.reason == ReasonCode.INVALID_PROFILE
    assert canary_profile(load_named_profile("sim")).arm_args["candidate"]


def test_a_real_cli_canary_on_an_account_runs_the_eval_arms() -> None:
    """On an account the profile is the eval's (intervention wired); the candidate runs
    the treated arm the intervention supports, else arm-not-supported."""
    from flows.canary.manifest import canary_profile

    wired = load_named_profile("claude")
    kept = canary_profile(wired, account="own", treated_arm="optimizer")
    assert kept.arm_args == wired.arm_args and kept.intervention == wired.intervention
    narrowed = wired.model_copy(update={"arm_args": {"baseline": wired.arm_args["baseline"]}})
    with pytest.raises(InvalidInputError, match="does not support the arm full") as refused:
        canary_profile(narrowed, account="own", treated_arm="full")
    assert refused.value.reason == ReasonCode.ARM_NOT_SUPPORTED
