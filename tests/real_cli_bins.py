"""Where the pinned real CLIs live in this environment (the wheels bundle the binaries)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.support import require


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def claude_binary() -> Path:
    """``claude`` from claude-agent-sdk (skips, or fails under PAIRLAB_REQUIRE_SERVICES)."""
    package = _package_dir("claude_agent_sdk")
    path = package / "_bundled" / "claude" if package else None
    require(path is not None and path.is_file(), "the claude binary of claude-agent-sdk")
    assert path is not None
    return path


def codex_binary() -> Path:
    """``codex`` from openai-codex-cli-bin (skips, or fails under PAIRLAB_REQUIRE_SERVICES)."""
    package = _package_dir("codex_cli_bin")
    path = package / "bin" / "codex" if package else None
    require(path is not None and path.is_file(), "the codex binary of openai-codex-cli-bin")
    assert path is not None
    return path
