"""The real Claude Code and Codex CLIs, as bundled in their pinned official wheels.

Both CLIs install from PyPI (shared/REAL-CLIS.md): ``claude-agent-sdk`` carries Claude
Code at ``claude_agent_sdk/_bundled/claude`` (its version in ``claude.version`` beside
it) and ``openai-codex-cli-bin`` carries Codex at ``codex_cli_bin/bin/codex`` (its
helper ``rg`` in ``codex_cli_bin/codex-path``). The packages are located without
being imported (``importlib.util.find_spec``), so resolving a CLI costs no import of
the Agent SDK.

* :func:`resolve_cli` -- one CLI's binary, version and the directories its command
  needs on PATH; a missing wheel or binary is :class:`EnvironmentUnavailable`
  (reason ``cli-unavailable``, exit 3).
* :func:`bundled_path_dirs` -- the directories that put ``claude`` and ``codex`` on
  an episode's PATH (``backends.local.agent_path`` appends them); a missing wheel is
  simply left out there (a profile that needs it then fails with "not found on PATH").
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Final, Literal

from pairlab.core.errors import EnvironmentUnavailable, ReasonCode

CliName = Literal["claude", "codex"]
REAL_CLIS: Final[tuple[CliName, ...]] = ("claude", "codex")
_PACKAGES: Final[dict[str, tuple[str, str]]] = {
    # cli: (import name, wheel name)
    "claude": ("claude_agent_sdk", "claude-agent-sdk"),
    "codex": ("codex_cli_bin", "openai-codex-cli-bin"),
}
_VERSION_TIMEOUT_S: Final = 20.0
# The non-interactive flags measured in shared/REAL-CLIS.md. Claude: after ``-p PROMPT``
# (root needs IS_SANDBOX=1 for the permission bypass). Codex: after ``exec``; put ``-c``
# overrides after ``exec`` too -- measured with 0.163.0, ``-c mcp_servers.X={...}``
# before ``exec`` starts no server (a provider override there does apply).
CLAUDE_PRINT_FLAGS: Final = (
    "--output-format",
    "stream-json",
    "--verbose",
    "--dangerously-skip-permissions",
)
CODEX_EXEC_FLAGS: Final = (
    "--skip-git-repo-check",
    "--json",
    "--dangerously-bypass-approvals-and-sandbox",
    "--disable",
    "plugins",
    "--disable",
    "unbounded_connection_retries",
)


@dataclass(frozen=True)
class BundledCli:
    """One real CLI as its wheel ships it."""

    name: CliName
    wheel: str
    binary: Path
    version: str
    # directories to put on PATH so the profile command ``name`` resolves (and its helpers)
    path_dirs: tuple[Path, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "wheel": self.wheel,
            "binary": str(self.binary),
            "version": self.version,
            "path_dirs": [str(p) for p in self.path_dirs],
        }


def _package_dir(import_name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(import_name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _unavailable(name: str, detail: str) -> EnvironmentUnavailable:
    wheel = _PACKAGES[name][1]
    return EnvironmentUnavailable(
        f"the real {name} CLI is not available: {detail} (install the pinned wheel "
        f"'{wheel}' with `uv sync --frozen`)",
        reason=ReasonCode.CLI_UNAVAILABLE,
    )


def _candidate(name: str) -> tuple[Path, tuple[Path, ...]] | None:
    """(binary, PATH dirs) where the wheel puts them, without checking they exist."""
    package = _package_dir(_PACKAGES[name][0])
    if package is None:
        return None
    if name == "claude":
        bundled = package / "_bundled"
        return bundled / "claude", (bundled,)
    return package / "bin" / "codex", (package / "bin", package / "codex-path")


def _claude_version(binary: Path) -> str:
    version_file = binary.parent / "claude.version"
    try:
        text = version_file.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise _unavailable("claude", f"{version_file} is unreadable ({exc})") from exc
    version = text.split()[0] if text else ""
    if not version:
        raise _unavailable("claude", f"{version_file} is empty")
    return version


def _codex_version(binary: Path) -> str:
    try:
        done = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=_VERSION_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise _unavailable("codex", f"`{binary} --version` failed ({exc})") from exc
    words = done.stdout.split()
    if done.returncode != 0 or not words:
        raise _unavailable(
            "codex", f"`{binary} --version` exited {done.returncode}: {done.stderr.strip()[:200]}"
        )
    return words[-1]  # "codex-cli 0.163.0"


def _package_version(name: str, binary: Path) -> str | None:
    """The version the wheel's own metadata names (codex-package.json), for cross-checking."""
    if name != "codex":
        return None
    try:
        meta = json.loads((binary.parent.parent / "codex-package.json").read_text())
    except (OSError, ValueError):
        return None
    version = meta.get("version") if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


@lru_cache(maxsize=4)
def resolve_cli(name: CliName) -> BundledCli:
    """The bundled binary of ``name`` and its version; raises when the wheel is missing."""
    if name not in _PACKAGES:
        raise EnvironmentUnavailable(
            f"unknown real CLI '{name}' (known: {', '.join(REAL_CLIS)})",
            reason=ReasonCode.CLI_UNAVAILABLE,
        )
    found = _candidate(name)
    if found is None:
        raise _unavailable(name, f"the Python package '{_PACKAGES[name][0]}' is not installed")
    binary, dirs = found
    if not binary.is_file():
        raise _unavailable(name, f"{binary} is missing from the installed wheel")
    version = _claude_version(binary) if name == "claude" else _codex_version(binary)
    declared = _package_version(name, binary)
    if declared is not None and declared != version:
        raise _unavailable(
            name, f"the binary reports {version} but its wheel declares {declared} (broken install)"
        )
    return BundledCli(
        name=name,
        wheel=_PACKAGES[name][1],
        binary=binary,
        version=version,
        path_dirs=tuple(d for d in dirs if d.is_dir()),
    )


def bundled_path_dirs() -> list[Path]:
    """Directories that put the bundled ``claude`` and ``codex`` on PATH (installed ones only)."""
    dirs: list[Path] = []
    for name in REAL_CLIS:
        found = _candidate(name)
        if found is None or not found[0].is_file():
            continue
        dirs.extend(d for d in found[1] if d.is_dir() and d not in dirs)
    return dirs


__all__ = [
    "CLAUDE_PRINT_FLAGS",
    "CODEX_EXEC_FLAGS",
    "REAL_CLIS",
    "BundledCli",
    "CliName",
    "bundled_path_dirs",
    "resolve_cli",
]
