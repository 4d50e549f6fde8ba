"""The treated-arm wiring files: rendered by one module, committed copies kept equal to it."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from pairlab.core.schemas.episode import ARMS
from pairlab.intervention.settings import ARMS as SERVER_ARMS
from pairlab.intervention.settings import PASSED_ENV
from tests.intervention_wiring import (
    CODEX_NAMESPACE,
    claude_arm_args,
    claude_mcp_config,
    codex_arm_args,
    codex_config_toml,
    write_claude_user_config,
    write_codex_config,
)
from tests.support import PROFILES_DIR


def test_committed_templates_equal_what_the_module_renders() -> None:
    committed_claude = json.loads(
        (PROFILES_DIR / "treatment" / "claude-mcp-config.json").read_text()
    )
    assert committed_claude == claude_mcp_config()
    seed = PROFILES_DIR / "treatment" / "codex" / ".codex" / "config.toml"
    assert seed.read_text() == codex_config_toml()


def test_codex_config_names_every_variable_the_server_reads() -> None:
    table = tomllib.loads(codex_config_toml())["mcp_servers"]["token-optimizer"]
    assert table["command"] == "token-optimizer" and table["args"] == ["mcp"]
    assert table["env_vars"] == list(PASSED_ENV)
    assert {"TOKEN_OPTIMIZER_EXPERIMENT_ARM", "PAIRLAB_STATE_DIR", "PAIRLAB_WORKSPACE_ROOT"} <= set(
        table["env_vars"]
    )
    flag, value = codex_arm_args()
    assert flag == "-c"
    key, _, inline = value.partition("=")
    assert key == "mcp_servers.token-optimizer"
    assert tomllib.loads(f"t = {inline}")["t"] == table
    assert CODEX_NAMESPACE == "mcp__token_optimizer"


def test_claude_arm_args_are_strict_and_inline() -> None:
    strict, flag, document = claude_arm_args()
    assert (strict, flag) == ("--strict-mcp-config", "--mcp-config")
    assert json.loads(document) == claude_mcp_config()


def test_writers_place_the_files_where_the_clis_read_them(tmp_path: Path) -> None:
    claude = write_claude_user_config(tmp_path / "home" / ".claude")
    assert claude == tmp_path / "home" / ".claude" / ".claude.json"
    assert json.loads(claude.read_text())["mcpServers"]["token-optimizer"]["type"] == "stdio"
    codex = write_codex_config(tmp_path / "home" / ".codex")
    assert codex.read_text() == codex_config_toml()


def test_the_server_knows_every_arm_an_eval_plans() -> None:
    assert set(ARMS) <= set(SERVER_ARMS)
