"""The real CLIs pairlab runs: ``REAL_CLIS``, one :class:`RealCli` record per CLI.

``REAL_CLIS[client]`` is where everything about one CLI is looked up (its module,
``clients.claude`` or ``clients.codex``, says what and why). Both CLIs install from
PyPI (shared/REAL-CLIS.md) as pinned wheels; the packages are located without being
imported (``importlib.util.find_spec``), so resolving a CLI costs no import of the
Agent SDK.

* :func:`resolve_cli` -- one CLI's binary, version and the directories its command
  needs on PATH; a missing wheel or binary is :class:`EnvironmentUnavailable`
  (reason ``cli-unavailable``, exit 3).
* :func:`bundled_path_dirs` -- the directories that put ``claude`` and ``codex`` on
  an episode's PATH (``backends.local.agent_path`` appends them); a missing wheel is
  simply left out there (a profile that needs it then fails with "not found on PATH").
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Final, Literal

from pairlab.adapters.clients.base import RealCli, unavailable
from pairlab.adapters.clients.claude import CLAUDE
from pairlab.adapters.clients.codex import CODEX
from pairlab.core.errors import EnvironmentUnavailable, ReasonCode

CliName = Literal["claude", "codex"]
REAL_CLIS: Final[dict[str, RealCli]] = {"claude": CLAUDE, "codex": CODEX}


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


def _candidate(cli: RealCli) -> tuple[Path, tuple[Path, ...]] | None:
    """(binary, PATH dirs) where the wheel puts them, without checking they exist."""
    package = _package_dir(cli.import_name)
    return None if package is None else cli.locate(package)


@lru_cache(maxsize=4)
def resolve_cli(name: CliName) -> BundledCli:
    """The bundled binary of ``name`` and its version; raises when the wheel is missing."""
    cli = REAL_CLIS.get(name)
    if cli is None:
        raise EnvironmentUnavailable(
            f"unknown real CLI '{name}' (known: {', '.join(REAL_CLIS)})",
            reason=ReasonCode.CLI_UNAVAILABLE,
        )
    found = _candidate(cli)
    if found is None:
        detail = f"the Python package '{cli.import_name}' is not installed"
        raise unavailable(name, cli.wheel, detail)
    binary, dirs = found
    if not binary.is_file():
        raise unavailable(name, cli.wheel, f"{binary} is missing from the installed wheel")
    version = cli.read_version(binary)
    declared = cli.declared_version(binary)
    if declared is not None and declared != version:
        detail = f"the binary reports {version} but its wheel declares {declared} (broken install)"
        raise unavailable(name, cli.wheel, detail)
    return BundledCli(
        name=name,
        wheel=cli.wheel,
        binary=binary,
        version=version,
        path_dirs=tuple(d for d in dirs if d.is_dir()),
    )


def bundled_path_dirs() -> list[Path]:
    """Directories that put the bundled ``claude`` and ``codex`` on PATH (installed ones only)."""
    dirs: list[Path] = []
    for cli in REAL_CLIS.values():
        found = _candidate(cli)
        if found is None or not found[0].is_file():
            continue
        dirs.extend(d for d in found[1] if d.is_dir() and d not in dirs)
    return dirs


__all__ = ["REAL_CLIS", "BundledCli", "CliName", "bundled_path_dirs", "resolve_cli"]
