"""How the suite is split across pytest-xdist workers (``-n 4 --dist loadgroup``, pyproject
addopts), which tests count as ``slow``, and in which order they are handed out.

Rules (applied at collection, in every worker alike, so the collections agree):

* **Groups** (``xdist_group``; one group runs on one worker, in order):
  ``stack`` for the team stack (fixed host ports, one compose project), ``browser`` for the
  browser tests (one Chromium at a time: each takes most of a core), and one group per
  module for a module whose tests share a module- or class-scoped fixture (an eval run, a
  built image, a started server), so that fixture runs once instead of once per worker.
  Every other test is scheduled alone. Session fixtures (Prefect harness/server, moto,
  Garage node, emulator) run once per worker on free ports in the worker's temp dirs.
* **Slow** (``make test-fast`` = ``-m "not slow"`` leaves them out; the README command
  runs everything): the modules of ``SLOW_MODULES`` besides the tests marked in their file.
* **Order**: tests that need no Docker image and no Garage first (in CI the images and Garage
  may still be building beside the tests),
  and within each half the heavy ones (slow, real CLIs, browser, stack, e2e) first so that
  the long groups start early instead of ending the run alone.
"""

from __future__ import annotations

import pytest

# Whole modules counted slow, with the reason; the marker is added at collection so that the
# files (some owned by other work) need no edit.
SLOW_MODULES: dict[str, str] = {
    "tests/e2e/test_real_cli_eval.py": "real-CLI evaluations through the flow",
    "tests/e2e/test_claims_real_clis.py": "a real-CLI evaluation per claim",
    "tests/e2e/test_warm_stratum_real_clis.py": "two real-CLI evaluations (harvest, reuse)",
    "tests/e2e/test_canary_browser.py": "browser against a Prefect server, paused flows",
    "tests/e2e/test_report_browser.py": "browser against a Prefect server",
    "tests/e2e/test_ui_trigger.py": "browser submit, worker runs the flow",
    "tests/e2e/test_ui_form_safety.py": "browser: refused forms, a resume, a foreign task",
}
HEAVY_MARKERS = frozenset({"slow", "realcli", "browser", "stack", "e2e"})
DOCKER_MARKERS = frozenset({"docker", "stack"})
DOCKER_FIXTURES = frozenset({"simclient_image"})
SHARED_SCOPES = frozenset({"module", "class", "package"})


def _module_path(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _markers(item: pytest.Item) -> set[str]:
    return {mark.name for mark in item.iter_markers()}


def _shares_fixture(item: pytest.Item) -> bool:
    """True when the item uses a fixture cached beyond one test but below the session."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(d.scope in SHARED_SCOPES for defs in info.name2fixturedefs.values() for d in defs)


def group_of(item: pytest.Item) -> str | None:
    marks = _markers(item)
    if "stack" in marks:
        return "stack"
    if "browser" in marks:
        return "browser"
    if _shares_fixture(item):
        return _module_path(item)
    return None


def needs_docker(item: pytest.Item) -> bool:
    return bool(_markers(item) & DOCKER_MARKERS) or bool(
        DOCKER_FIXTURES & set(getattr(item, "fixturenames", ()))
    )


def needs_garage(item: pytest.Item) -> bool:
    """A test on the Garage server (a store fixture's ``garage`` parameter): in CI the binary
    may still be building beside the tests (`.ci/run`), so it goes with the late half."""
    callspec = getattr(item, "callspec", None)
    return "garage_server" in getattr(item, "fixturenames", ()) or (
        callspec is not None and "garage" in callspec.params.values()
    )


def _rank(item: pytest.Item) -> tuple[int, int]:
    late = needs_docker(item) or needs_garage(item)
    return (int(late), 0 if _markers(item) & HEAVY_MARKERS else 1)


def assign_groups_and_order(items: list[pytest.Item]) -> None:
    """Mark slow modules, assign xdist groups and sort ``items`` in place (see module doc)."""
    for item in items:
        if _module_path(item) in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
    groups: dict[int, str | None] = {}
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            groups[id(item)] = None  # the test file chose its group
            continue
        group = group_of(item)
        groups[id(item)] = group
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # a group runs as a unit: every member takes the group's most urgent rank
    group_rank: dict[str, tuple[int, int]] = {}
    for item in items:
        group = groups[id(item)]
        if group is not None:
            group_rank[group] = min(group_rank.get(group, (9, 9)), _rank(item))
    position = {id(item): index for index, item in enumerate(items)}

    def key(item: pytest.Item) -> tuple[int, int, int]:
        group = groups[id(item)]
        rank = group_rank[group] if group is not None else _rank(item)
        return (*rank, position[id(item)])

    items.sort(key=key)
