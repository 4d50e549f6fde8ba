"""Each real CLI's treated-arm wiring is generated from the intervention manifest; for the
reference intervention it is what the profiles wired by hand before, byte for byte, plus
Codex's ``required = true`` (it then waits for the server's handshake before its first request)."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from pairlab.adapters.backends.base import EpisodeSpec
from pairlab.adapters.backends.environment import EpisodePaths, build_argv, build_env
from pairlab.adapters.interventions import load_intervention
from pairlab.adapters.profiles import load_named_profile
from pairlab.core.errors import ExecutionError, InvalidInputError, ReasonCode
from pairlab.core.intervention_wiring import wire_profile
from pairlab.core.schemas.intervention_manifest import intervention_identity, parse_manifest
from pairlab.core.schemas.profile import parse_profile
from tests.support import PROFILES_DIR

# What runner_profiles/claude.yaml and codex.yaml said for every treated arm before the
# manifest existed (commit 6ca13d8), copied byte for byte.
HAND_WIRED_CLAUDE: Final = [
    "--setting-sources",
    "",
    "--strict-mcp-config",
    "--mcp-config",
    '{"mcpServers":{"token-optimizer":{"type":"stdio","command":"token-optimizer","args":["mcp"]}}}',
]
HAND_WIRED_CODEX: Final = [
    "--ignore-user-config",
    "--ignore-rules",
    "-c",
    "project_doc_max_bytes=0",
    "-c",
    "skills.include_instructions=false",
    "-c",
    'mcp_servers.token-optimizer={command = "token-optimizer", args = ["mcp"], env_vars = '
    '["TOKEN_OPTIMIZER_EXPERIMENT_ARM", "TOKEN_OPTIMIZER_LEDGER", '
    '"TOKEN_OPTIMIZER_PREVIEW_THRESHOLD_TOKENS", "TOKEN_OPTIMIZER_PREVIEW_HEAD_TOKENS", '
    '"TOKEN_OPTIMIZER_TRACE", "PAIRLAB_STATE_DIR", "PAIRLAB_WORKSPACE_ROOT", '
    '"PAIRLAB_WORKSPACE", "PAIRLAB_EPISODE_ID", "PAIRLAB_RUN_ID", "PAIRLAB_PAIR_ID", '
    '"PAIRLAB_TASK_ID", "PAIRLAB_SEED", "PAIRLAB_GRAPH_DIR", "TIKTOKEN_CACHE_DIR", "TMPDIR"], '
    "startup_timeout_sec = 30, required = true}",
]
HAND_WIRED_BASELINE: Final = {
    "claude": [
        "--setting-sources",
        "",
        "--strict-mcp-config",
        "--mcp-config",
        '{"mcpServers":{}}',
    ],
    "codex": HAND_WIRED_CODEX[:6],
}

THIRD_PARTY: dict[str, Any] = {
    "id": "code-index",
    "version": "2.0.1",
    "description": "a code index over the workspace",
    "kind": "stdio",
    "server_name": "code_index",
    "install": {"pypi": "code-index-mcp==2.0.1", "sha256": "b" * 64},
    "command": "code-index-mcp",
    "args": ["--root", "."],
    "env": {"CODE_INDEX_QUIET": "1"},
    "env_vars": ["CODE_INDEX_QUIET", "CODE_INDEX_DEPTH", "PAIRLAB_WORKSPACE"],
    "arms": {
        "optimizer": {},
        "retrieval": "unsupported",
        "full": {"args": ["--deep"], "env": {"CODE_INDEX_DEPTH": "9"}},
    },
    "startup_timeout_s": 45,
}


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_reference_wiring_is_byte_identical_to_the_hand_wired_profiles(cli: str) -> None:
    profile = load_named_profile(cli)
    expected = HAND_WIRED_CLAUDE if cli == "claude" else HAND_WIRED_CODEX
    for arm in ("optimizer", "retrieval", "full"):
        assert profile.arm_args[arm] == expected
    assert profile.arm_args["baseline"] == HAND_WIRED_BASELINE[cli]  # stays stripped
    # Claude Code reads the startup timeout from MCP_TIMEOUT (ms): the manifest's 30 s
    timeout = {"MCP_TIMEOUT": "30000"} if cli == "claude" else {}
    assert profile.treatment.env == {**timeout, "TIKTOKEN_CACHE_DIR": ""}
    assert "TIKTOKEN_CACHE_DIR" not in profile.env  # the intervention's, not the profile's
    reference = load_intervention("reference")
    assert profile.intervention is not None
    assert profile.intervention.manifest_sha256 == reference.identity.manifest_sha256


def test_the_profiles_name_no_intervention() -> None:
    for name in ("claude", "codex"):
        text = json.dumps(_profile_data(name))  # the content, comments aside
        assert "token-optimizer" not in text and "mcp_servers." not in text
        assert "{intervention}" in text


def _wired(cli: str, tmp_path: Path, data: dict[str, Any] = THIRD_PARTY) -> Any:
    path = tmp_path / "third-party.yaml"
    path.write_text(yaml.safe_dump(data))
    loaded = load_intervention(str(path))
    return load_named_profile(cli, intervention=loaded), loaded.manifest


def test_a_third_party_server_is_wired_into_claude_per_arm(tmp_path: Path) -> None:
    profile, manifest = _wired("claude", tmp_path)
    assert "retrieval" not in profile.arm_args  # unsupported: not offered
    assert profile.arm_args["baseline"] == HAND_WIRED_BASELINE["claude"]
    for arm, args in (("optimizer", ["--root", "."]), ("full", ["--root", ".", "--deep"])):
        head, document = profile.arm_args[arm][:4], profile.arm_args[arm][4]
        assert head == ["--setting-sources", "", "--strict-mcp-config", "--mcp-config"]
        server = json.loads(document)["mcpServers"]["code_index"]
        assert server == {"type": "stdio", "command": "code-index-mcp", "args": args}
    assert profile.treatment.env == {"MCP_TIMEOUT": "45000", "CODE_INDEX_QUIET": "1"}
    assert profile.treatment.arm_env == {"full": {"CODE_INDEX_DEPTH": "9"}}
    assert profile.intervention is not None
    assert profile.intervention.id == "code-index"
    assert profile.intervention.manifest_sha256 == intervention_identity(manifest).manifest_sha256


def test_a_third_party_server_is_wired_into_codex_after_exec(tmp_path: Path) -> None:
    profile, _ = _wired("codex", tmp_path)
    assert profile.command[-1] == "exec"  # every -c of the arm args comes after it
    flag, value = profile.arm_args["full"][-2:]
    assert flag == "-c"
    key, _, inline = value.partition("=")
    assert key == "mcp_servers.code_index"
    table = tomllib.loads(f"t = {inline}")["t"]
    assert table == {
        "command": "code-index-mcp",
        "args": ["--root", ".", "--deep"],
        "env_vars": ["CODE_INDEX_QUIET", "CODE_INDEX_DEPTH", "PAIRLAB_WORKSPACE"],
        "startup_timeout_sec": 45,
        "required": True,
    }


def test_a_streamable_http_server_is_wired_by_url(tmp_path: Path) -> None:
    url = "http://127.0.0.1:8765/mcp"
    data = copy.deepcopy(THIRD_PARTY) | {"kind": "streamable-http", "url": url}
    claude, _ = _wired("claude", tmp_path, data)
    document = json.loads(claude.arm_args["optimizer"][-1])
    assert document == {"mcpServers": {"code_index": {"type": "http", "url": url}}}
    codex, _ = _wired("codex", tmp_path, data)
    inline = codex.arm_args["optimizer"][-1].partition("=")[2]
    assert tomllib.loads(f"t = {inline}")["t"] == {
        "url": "http://127.0.0.1:8765/mcp",
        "startup_timeout_sec": 45,
        "required": True,
    }


def test_a_fixed_treatment_profile_takes_only_the_reference(tmp_path: Path) -> None:
    sim = load_named_profile("sim")
    assert sim.intervention is not None and sim.intervention.id == "reference"
    with pytest.raises(InvalidInputError) as info:
        _wired("sim", tmp_path)
    assert info.value.reason == ReasonCode.ARM_NOT_SUPPORTED
    assert "code-index" in info.value.message


def _profile_data(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((PROFILES_DIR / f"{name}.yaml").read_text())
    return data


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda d: d["arm_args"]["full"].remove("{intervention}"), "arm 'full'"),
        (lambda d: d["arm_args"]["baseline"].append("{intervention}"), "arm 'baseline'"),
        (lambda d: d.pop("intervention_wiring"), "arm 'optimizer'"),
        (lambda d: d.__setitem__("intervention", {"id": "x"}), "names no intervention"),
    ],
)
def test_a_profile_with_a_misplaced_intervention_is_refused(mutate: Any, words: str) -> None:
    data = _profile_data("claude")
    data["arm_args"] = {arm: list(args) for arm, args in data["arm_args"].items()}
    mutate(data)
    with pytest.raises(InvalidInputError) as info:
        parse_profile(data, "claude.yaml")
    assert info.value.reason == ReasonCode.INVALID_PROFILE
    assert words in info.value.message


def test_a_wired_profile_is_never_wired_again() -> None:
    manifest = parse_manifest(copy.deepcopy(THIRD_PARTY))
    with pytest.raises(ValueError, match="already wired"):
        wire_profile(load_named_profile("claude"), manifest)


def test_an_unwired_placeholder_never_reaches_a_command_line(tmp_path: Path) -> None:
    raw = parse_profile(_profile_data("codex"), "codex.yaml")  # not loaded: not wired
    spec = EpisodeSpec(
        run_id="r",
        episode_id="e",
        pair_id="p",
        task_id="t",
        arm="optimizer",
        prompt="hi",
        profile=raw,
        fixture_dir=tmp_path,
        workspace_subdir=".",
        timeout_s=5,
        endpoint_url="http://127.0.0.1:1",
    )
    with pytest.raises(ExecutionError) as info:
        build_argv(spec, str(tmp_path))
    assert "unwired {intervention}" in info.value.message
    wired, _ = _wired("codex", tmp_path)
    spec = spec.model_copy(update={"profile": wired, "arm": "full"})
    argv = build_argv(spec, str(tmp_path))
    assert argv[: len(wired.command)] == wired.command
    home = str(tmp_path / "home")
    paths = EpisodePaths(str(tmp_path), str(tmp_path), home, home, home, None, None)
    env, _ = build_env(spec, paths, {})
    assert (env["CODE_INDEX_QUIET"], env["CODE_INDEX_DEPTH"]) == ("1", "9")
    baseline_env, _ = build_env(spec.model_copy(update={"arm": "baseline"}), paths, {})
    assert "CODE_INDEX_QUIET" not in baseline_env and "CODE_INDEX_DEPTH" not in baseline_env
