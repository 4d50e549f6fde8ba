"""Test support shared by every layer.

``require(condition, what)`` skips a service-dependent test with a clear reason
when the service is absent -- except when ``PAIRLAB_REQUIRE_SERVICES=1`` (set by
``.ci/run``), where the missing service is a failure: nothing is silently untested.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from flows.evidence.episode_attempt import EXECUTION_LOG

REPO_ROOT = Path(__file__).resolve().parent.parent
CATALOG_DIR = REPO_ROOT / "catalog"
PROFILES_DIR = REPO_ROOT / "runner_profiles"
# Debian's chromium, driven by playwright in the browser tests.
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


COMPARE_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "compare"


def pairlab_argv(*args: str) -> list[str]:
    """argv running the installed ``pairlab`` console script (else the module) with args."""
    script = Path(sys.executable).parent / "pairlab"
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-c", "from pairlab.cli import main; main()", *args]


def run_pairlab(*args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess (its own exit code); never a traceback."""
    proc = subprocess.run(
        pairlab_argv(*args), capture_output=True, text=True, check=False, timeout=120
    )
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc


def compare_cases() -> ModuleType:
    """tests/fixtures/compare/generate.py: the golden loom artifacts and their builders."""
    spec = importlib.util.spec_from_file_location("compare_cases", COMPARE_FIXTURES / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cli_exit(args: list[str]) -> int:
    """Run the ``pairlab`` CLI in-process; its exit status as the shell would see it
    (a non-integer ``SystemExit`` code, e.g. a message, is status 1, not success)."""
    from pairlab.cli import main

    with pytest.raises(SystemExit) as exited:
        main(args)
    code = exited.value.code
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def services_required() -> bool:
    return os.environ.get("PAIRLAB_REQUIRE_SERVICES", "") not in ("", "0", "false")


GARAGE_BUILD_DONE_ENV = "PAIRLAB_GARAGE_BUILD_DONE"
GARAGE_BUILD_WAIT_S = 3600.0


def wait_for_garage_build() -> None:
    """When `.ci/run` builds Garage beside the tests (``PAIRLAB_GARAGE_BUILD_DONE`` names the
    file its build writes when it ends, binary and image, success or not), wait for that file
    before looking for the binary; otherwise return at once. A test that needs Garage then
    finds the binary, or skips/fails as without the variable."""
    done = os.environ.get(GARAGE_BUILD_DONE_ENV, "")
    if not done:
        return
    deadline = time.monotonic() + GARAGE_BUILD_WAIT_S
    while not Path(done).exists() and time.monotonic() < deadline:
        time.sleep(5)


def require(available: bool, what: str) -> None:
    if available:
        return
    if services_required():
        pytest.fail(f"required service unavailable (PAIRLAB_REQUIRE_SERVICES=1): {what}")
    pytest.skip(f"service unavailable: {what}")


def read_execution_log(episode_dir: Path) -> list[dict[str, Any]]:
    """The ``start``/``end`` lines an episode's attempts appended (``episode_attempt``)."""
    path = episode_dir / EXECUTION_LOG
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def optimizer_only_manifest(directory: Path) -> Path:
    """An intervention manifest that supports only the optimizer arm (as
    interventions/mcp-server-git.yaml) and runs the reference server's command, so nothing
    is installed: a third-party-like intervention offline."""
    path = directory / "optimizer-only.yaml"
    manifest = {
        "schema_version": 1,
        "id": "optimizer-only",
        "version": "0",
        "description": "A third-party-like server: the optimizer arm only.",
        "kind": "stdio",
        "install": {"module": "pairlab.intervention"},
        "command": "token-optimizer",
        "args": ["mcp"],
        "arms": {"optimizer": {}, "retrieval": "unsupported", "full": "unsupported"},
        "startup_timeout_s": 30,
    }
    path.write_text(json.dumps(manifest))
    return path
