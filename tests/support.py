"""Test support shared by every layer.

``require(condition, what)`` skips a service-dependent test with a clear reason
when the service is absent -- except when ``PAIRLAB_REQUIRE_SERVICES=1`` (set by
``.ci/run``), where the missing service is a failure: nothing is silently untested.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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


def require(available: bool, what: str) -> None:
    if available:
        return
    if services_required():
        pytest.fail(f"required service unavailable (PAIRLAB_REQUIRE_SERVICES=1): {what}")
    pytest.skip(f"service unavailable: {what}")
