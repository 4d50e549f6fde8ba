"""How a treated arm reaches the reference intervention through each real CLI's own config:
the generator of the committed copies under ``runner_profiles/treatment/`` and the wiring
the real-CLI tests place. Production generates the same from the manifest
(``pairlab.core.intervention_wiring`` with ``interventions/reference.yaml``); every
function here delegates to it for the reference's ``optimizer`` arm (its three arms are
wired alike).

Measured against the real binaries (tests/integration/test_intervention_real_clis.py):

* **Claude Code** reads MCP servers from ``--mcp-config`` (a file or an inline JSON
  string; with ``--strict-mcp-config`` nothing else) or, at user scope, from
  ``$CLAUDE_CONFIG_DIR/.claude.json`` (``~/.claude.json`` without the variable) --
  never from ``settings.json``. It hands the server its whole environment.
* **Codex** reads ``[mcp_servers.token-optimizer]`` from ``$CODEX_HOME/config.toml``
  or from ``-c mcp_servers.token-optimizer={...}`` (which also works under
  ``--ignore-user-config``). It hands the server only HOME, PATH, the locale and the
  variables listed in ``env_vars`` -- the manifest's ``env_vars``.

The server command is ``token-optimizer mcp``, resolved on the episode's PATH (the
venv's bin locally, ``/usr/local/bin`` in the client images), so no rendered file
holds an absolute path. ``uv run python -m tests.intervention_wiring`` rewrites
``runner_profiles/treatment/claude-mcp-config.json`` and
``runner_profiles/treatment/codex/.codex/config.toml`` (a test keeps them equal).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

from pairlab.adapters.interventions import load_intervention
from pairlab.core import intervention_wiring as wiring
from pairlab.core.schemas.intervention_manifest import InterventionManifest
from pairlab.intervention import SERVER_NAME

EMPTY_CLAUDE_MCP_CONFIG: Final = wiring.EMPTY_CLAUDE_MCP_CONFIG
# How each CLI names the server's tools to the model.
CLAUDE_TOOL_PREFIX: Final = f"mcp__{SERVER_NAME}__"  # mcp__token-optimizer__read_file
CODEX_NAMESPACE: Final = "mcp__" + SERVER_NAME.replace("-", "_")  # mcp__token_optimizer
_ARM: Final = "optimizer"


@lru_cache(maxsize=1)
def reference() -> InterventionManifest:
    return load_intervention("reference").manifest


def claude_mcp_config() -> dict[str, Any]:
    """The ``--mcp-config`` / ``.claude.json`` ``mcpServers`` document."""
    return wiring.claude_mcp_config(reference(), _ARM)


def claude_mcp_config_json() -> str:
    """The same document as the compact JSON string ``--mcp-config`` takes."""
    return wiring.claude_mcp_config_json(reference(), _ARM)


def claude_arm_args() -> list[str]:
    """Treated-arm flags: only this server (inline JSON, no file to place)."""
    return wiring.claude_arm_args(reference(), _ARM)


def codex_arm_args() -> list[str]:
    """Treated-arm flags: the server given with ``-c`` (works with ``--ignore-user-config``)."""
    return wiring.codex_arm_args(reference(), _ARM)


def codex_config_toml() -> str:
    """``$CODEX_HOME/config.toml`` holding only the server."""
    return wiring.codex_config_toml(reference(), _ARM)


def write_claude_user_config(claude_config_dir: Path) -> Path:
    """Put the server at user scope: ``<CLAUDE_CONFIG_DIR>/.claude.json`` (loaded unless
    ``--setting-sources`` drops ``user`` or ``--strict-mcp-config`` is given)."""
    path = claude_config_dir / ".claude.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(claude_mcp_config(), indent=2) + "\n", encoding="utf-8")
    return path


def write_codex_config(codex_home: Path) -> Path:
    path = codex_home / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(codex_config_toml(), encoding="utf-8")
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
