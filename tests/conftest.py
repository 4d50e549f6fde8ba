from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# Keep Prefect offline and quiet in every test process.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
# A pairlab command a test starts without a server (PREFECT_API_URL unset) starts Prefect's
# ephemeral one; on a loaded 2-core machine that took longer than Prefect's default wait
# ("Timed out while attempting to connect to ephemeral Prefect API server").
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "600")
# Docker resources of this test process (and of the pairlab processes it starts) carry the
# label pairlab.scope=pytest-<xdist worker>: orphan cleanup in one worker never removes what
# another worker (or a user's run) made (pairlab.adapters.backends.docker.cleanup_orphans).
# PAIRLAB_TEST_SCOPE names the test session (default "pytest"): two sessions on one machine
# (two checkouts) then never clean up each other's containers either.
os.environ["PAIRLAB_DOCKER_SCOPE"] = (
    f"{os.environ.get('PAIRLAB_TEST_SCOPE', 'pytest')}-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
)


import pytest  # noqa: E402

from tests.prefect_server import STARTUP_TIMEOUT_S  # noqa: E402
from tests.scheduling import assign_groups_and_order  # noqa: E402


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """xdist groups, slow marks and the run order (tests/scheduling.py)."""
    assign_groups_and_order(items)


@pytest.fixture(scope="session")
def prefect_harness():  # type: ignore[no-untyped-def]
    """One real Prefect engine (test harness, temporary SQLite) per test session."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=STARTUP_TIMEOUT_S):
        yield


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):  # type: ignore[no-untyped-def]
    """A real Prefect server process (v1 UI, SQLite) shared by the tests of a session."""
    from tests.prefect_server import running_prefect_server

    with running_prefect_server(tmp_path_factory.mktemp("prefect-server")) as server:
        yield server
