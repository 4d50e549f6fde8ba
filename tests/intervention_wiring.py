"""How a treated arm reaches the reference intervention through each real CLI's own config:
the generator of the committed copies the profiles use, and the wiring the real-CLI tests
place (production reads only the committed copies and the profiles' own arm args).

Measured against the real binaries (tests/integration/test_intervention_real_clis.py):

* **Claude Code** reads MCP servers from ``--mcp-config`` (a file or an inline JSON
  string; with ``--strict-mcp-config`` nothing else) or, at user scope, from
  ``$CLAUDE_CONFIG_DIR/.claude.json`` (``~/.claude.json`` without the variable) --
  never from ``settings.json``. It hands the server its whole environment.
  Recommended: the baseline's own isolation flags plus :func:`claude_arm_args`,
  so the arms differ by the intervention only.
* **Codex** reads ``[mcp_servers.token-optimizer]`` from ``$CODEX_HOME/config.toml``
  or from ``-c mcp_servers.token-optimizer={...}`` (which also works under
  ``--ignore-user-config``). It hands the server only HOME, PATH, the locale and the
  variables listed in ``env_vars`` -- so the config lists :data:`PASSED_ENV`.
  Recommended: the baseline's flags plus :func:`codex_arm_args`.

The server command is ``token-optimizer mcp``, resolved on the episode's PATH (the
venv's bin locally, ``/usr/local/bin`` in the client images), so no rendered file
holds an absolute path. Committed copies for profiles and home seeds:
``runner_profiles/treatment/claude-mcp-config.json`` and
``runner_profiles/treatment/codex/.codex/config.toml`` (a test keeps them equal to
what this module renders). ``uv run python -m tests.intervention_wiring`` rewrites them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from pairlab.intervention import SERVER_NAME
from pairlab.intervention.settings import PASSED_ENV

SERVER_COMMAND: Final = ("token-optimizer", "mcp")
# Seconds the CLI waits for the server's handshake (Codex's default of 10 s is short for
# a Python start plus the tokenizer on a loaded 2-core machine).
STARTUP_TIMEOUT_S: Final = 30
EMPTY_CLAUDE_MCP_CONFIG: Final = '{"mcpServers":{}}'
# How each CLI names the server's tools to the model.
CLAUDE_TOOL_PREFIX: Final = f"mcp__{SERVER_NAME}__"  # mcp__token-optimizer__read_file
CODEX_NAMESPACE: Final = "mcp__" + SERVER_NAME.replace("-", "_")  # mcp__token_optimizer


def claude_mcp_config(command: Sequence[str] = SERVER_COMMAND) -> dict[str, Any]:
    """The ``--mcp-config`` / ``.claude.json`` ``mcpServers`` document."""
    return {
        "mcpServers": {
            SERVER_NAME: {"type": "stdio", "command": command[0], "args": list(command[1:])}
        }
    }


def claude_mcp_config_json(command: Sequence[str] = SERVER_COMMAND) -> str:
    return json.dumps(claude_mcp_config(command), separators=(",", ":"))


def claude_arm_args(command: Sequence[str] = SERVER_COMMAND) -> list[str]:
    """Treated-arm flags: only this server (inline JSON, no file to place)."""
    return ["--strict-mcp-config", "--mcp-config", claude_mcp_config_json(command)]


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid TOML basic string


def _toml_array(values: Sequence[str]) -> str:
    return "[" + ", ".join(_toml_string(v) for v in values) + "]"


def codex_server_table(command: Sequence[str] = SERVER_COMMAND) -> str:
    """The server as an inline TOML table (the value of ``-c mcp_servers.<name>=``)."""
    return (
        f"{{command = {_toml_string(command[0])}, args = {_toml_array(command[1:])}, "
        f"env_vars = {_toml_array(PASSED_ENV)}, startup_timeout_sec = {STARTUP_TIMEOUT_S}}}"
    )


def codex_arm_args(command: Sequence[str] = SERVER_COMMAND) -> list[str]:
    """Treated-arm flags: the server given with ``-c`` (works with ``--ignore-user-config``)."""
    return ["-c", f"mcp_servers.{SERVER_NAME}={codex_server_table(command)}"]


def codex_config_toml(command: Sequence[str] = SERVER_COMMAND) -> str:
    """``$CODEX_HOME/config.toml`` holding only the server."""
    return (
        "# Treated arms: pairlab's reference intervention (token-optimizer, an MCP server).\n"
        "# Rendered by tests/intervention_wiring.py; Codex passes the server only\n"
        "# the variables named in env_vars.\n"
        f"[mcp_servers.{SERVER_NAME}]\n"
        f"command = {_toml_string(command[0])}\n"
        f"args = {_toml_array(command[1:])}\n"
        f"env_vars = {_toml_array(PASSED_ENV)}\n"
        f"startup_timeout_sec = {STARTUP_TIMEOUT_S}\n"
    )


def write_claude_user_config(
    claude_config_dir: Path, command: Sequence[str] = SERVER_COMMAND
) -> Path:
    """Put the server at user scope: ``<CLAUDE_CONFIG_DIR>/.claude.json`` (loaded unless
    ``--setting-sources`` drops ``user`` or ``--strict-mcp-config`` is given)."""
    path = claude_config_dir / ".claude.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(claude_mcp_config(command), indent=2) + "\n", encoding="utf-8")
    return path


def write_codex_config(codex_home: Path, command: Sequence[str] = SERVER_COMMAND) -> Path:
    path = codex_home / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(codex_config_toml(command), encoding="utf-8")
    return path


def write_committed_copies(treatment_dir: Path) -> list[Path]:
    """Render the committed copies under ``runner_profiles/treatment/``."""
    claude = treatment_dir / "claude-mcp-config.json"
    claude.write_text(json.dumps(claude_mcp_config(), indent=2) + "\n", encoding="utf-8")
    return [claude, write_codex_config(treatment_dir / "codex" / ".codex")]


if __name__ == "__main__":
    for written in write_committed_copies(
        Path(__file__).parent.parent / "runner_profiles" / "treatment"
    ):
        print(written)
