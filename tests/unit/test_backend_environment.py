"""The episode argv and environment, built the same way for every backend."""

from __future__ import annotations

from pathlib import Path

from pairlab.adapters.backends import EpisodeSpec
from pairlab.adapters.backends.environment import EpisodePaths, build_argv, build_env
from pairlab.adapters.backends.process import StreamCapture
from pairlab.adapters.profiles import load_named_profile
from tests.support import PROFILES_DIR

PATHS = EpisodePaths(
    workspace_root="/w",
    workdir="/w/src",
    home="/h",
    graph="/g",
    state="/s",
    solution=None,
    account=None,
)


def spec(
    arm: str = "baseline", model: str | None = None, prompt: str = "fix {arm} now"
) -> EpisodeSpec:
    profile = load_named_profile("sim", PROFILES_DIR)
    profile = profile.model_copy(
        update={
            "env": {"STATIC": "1", "HOME": "/profile-home"},
            "env_allowlist": ["LANG", "SHARED"],
            "secrets": ["API_KEY"],
            "treatment": profile.treatment.model_copy(update={"env": {"TREATED": "yes"}}),
        }
    )
    return EpisodeSpec(
        run_id="r",
        episode_id=f"r:t:0:{arm}",
        pair_id="r:t:0",
        task_id="t",
        arm=arm,
        prompt=prompt,
        profile=profile,
        fixture_dir=Path("/nonexistent"),
        model=model,
        timeout_s=10,
        extra_env={"PAIRLAB_EPISODE_ID": "spoofed"},
    )


def test_arm_args_come_before_the_prompt_and_placeholders_fill_once() -> None:
    argv = build_argv(spec(model="m-1"), "/w/src")
    assert argv[:4] == ["simclient", "exec", "--format", "claude"]
    assert argv[4:6] == ["--cwd", "/w/src"]  # baseline arm args, before the prompt
    assert argv[-3:] == ["m-1", "--", "fix {arm} now"]  # the prompt is not re-expanded


def test_no_model_drops_the_model_flag() -> None:
    argv = build_argv(spec(model=None), "/w/src")
    assert "--model" not in argv and "" not in argv
    assert argv[-2:] == ["--", "fix {arm} now"]


def test_environment_only_from_allowlist_profile_and_identity() -> None:
    host = {"LANG": "C.UTF-8", "SHARED": "x", "NOT_LISTED": "y", "API_KEY": "k-123", "PATH": "/bin"}
    env, secrets = build_env(spec(), PATHS, host)
    assert env["LANG"] == "C.UTF-8" and env["SHARED"] == "x"
    assert "NOT_LISTED" not in env and "PATH" not in env
    assert "API_KEY" not in env and secrets == {"API_KEY": "k-123"}
    assert env["CLAUDE_CONFIG_DIR"] == "/h/.claude" and env["CODEX_HOME"] == "/h/.codex"
    assert env["GEMINI_CLI_HOME"] == "/h"
    assert (
        env["HOME"] == "/profile-home"
    )  # the profile wins over the fresh HOME: certify must catch it
    assert env["PAIRLAB_EPISODE_ID"] == "r:t:0:baseline"  # identity cannot be overridden
    assert env["TOKEN_OPTIMIZER_EXPERIMENT_ARM"] == "baseline"
    assert env["PAIRLAB_WORKSPACE"] == "/w/src" and env["PAIRLAB_STATE_DIR"] == "/s"
    assert "TREATED" not in env and "PAIRLAB_TASK_SOLUTION" not in env


def test_treatment_env_only_on_treated_arms() -> None:
    env, _ = build_env(spec(arm="optimizer"), PATHS, {})
    assert env["TREATED"] == "yes"
    assert env["TOKEN_OPTIMIZER_EXPERIMENT_ARM"] == "optimizer"


def test_capture_is_bounded_and_says_so() -> None:
    capture = StreamCapture(cap=10)
    capture.feed(b"0123456")
    capture.feed(b"789abc")
    capture.feed(b"more")
    assert capture.text() == "0123456789" and capture.truncated is True
    exact = StreamCapture(cap=4)
    exact.feed(b"abcd")
    assert exact.truncated is False


def test_env_values_name_the_episode_dirs_and_leave_other_braces_alone() -> None:
    base = spec()
    profile = base.profile.model_copy(
        update={
            "env": {
                "OTEL_PATH": "{home}/.copilot/otel/spans.jsonl",
                "WHERE": "{workspace}:{state}:{graph}",
                "JSON": '{"a": 1} {prompt} {model}',
            }
        }
    )
    env, _ = build_env(base.model_copy(update={"profile": profile}), PATHS, {})
    assert env["OTEL_PATH"] == "/h/.copilot/otel/spans.jsonl"
    assert env["WHERE"] == "/w/src:/s:/g"
    assert env["JSON"] == '{"a": 1} {prompt} {model}'  # not an env placeholder: as written


def test_copilot_profile_argv_env_and_usage_paths_agree() -> None:
    import fnmatch

    from pairlab.adapters.certify.sim_probe import config_in_home

    profile = load_named_profile("copilot", PROFILES_DIR)

    def argv_of(arm: str, model: str | None) -> list[str]:
        s = spec(arm=arm, model=model)
        return build_argv(s.model_copy(update={"profile": profile}), "/w/src")

    baseline = argv_of("baseline", "gpt-5.6-terra")
    treated = argv_of("optimizer", None)
    # one prompt and exit; the built-in MCP servers off on every arm, not only the baseline
    for argv in (baseline, treated):
        assert argv[0] == "copilot" and argv[-2:] == ["-p", "fix {arm} now"]
        assert "--disable-builtin-mcps" in argv and "--allow-all-tools" in argv
        assert argv[argv.index("--add-dir") + 1] == "/w/src"
    # the baseline strips custom instructions, before the prompt; treated arms keep them
    assert baseline.index("--no-custom-instructions") < baseline.index("-p")
    assert "--no-custom-instructions" not in treated
    assert baseline[baseline.index("--model") + 1] == "gpt-5.6-terra"
    assert "--model" not in treated  # no model: the flag goes with it
    # the OpenTelemetry file lands under the episode HOME, where the usage reader looks
    s = spec(arm="optimizer").model_copy(update={"profile": profile})
    env, _ = build_env(s, PATHS, {})
    assert env["COPILOT_OTEL_ENABLED"] == "true" and env["COPILOT_OTEL_EXPORTER_TYPE"] == "file"
    otel = Path(env["COPILOT_OTEL_FILE_EXPORTER_PATH"])
    relative = otel.relative_to(PATHS.home).as_posix()
    assert any(fnmatch.fnmatch(relative, glob) for glob in profile.usage.paths), relative
    # the treatment seed configures exactly the token optimizer's MCP server
    assert profile.treatment.home_seed is not None
    assert config_in_home(Path(profile.treatment.home_seed)).mcp_servers == ("token-optimizer",)


def test_pid_alive_never_mistakes_a_bad_pid_for_ourselves() -> None:
    import os

    from pairlab.adapters.backends.process import pid_alive

    assert pid_alive(os.getpid()) and pid_alive(str(os.getpid()))
    # kill(0, 0) would signal our own process group and "succeed"
    for bad in (0, -1, None, "", "not-a-pid"):
        assert pid_alive(bad) is False, bad
