"""Tasks belong to their suite: a task of another suite is refused in one line (issue 29)."""

from __future__ import annotations

import pytest

from pairlab.adapters.paths import catalog_dir
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.catalog import load_suite


def test_selection_keeps_suite_order_and_refuses_a_foreign_task() -> None:
    core = load_suite(catalog_dir(), "core")
    ids = [t.id for t in core.tasks]
    assert core.select([]) == ids
    assert core.select([ids[2], ids[0]]) == [ids[0], ids[2]]  # suite order, not the request's
    other = next(
        t.id
        for s in sorted(p.stem for p in (catalog_dir() / "suites").glob("*.yaml"))
        for t in load_suite(catalog_dir(), s).tasks
        if t.id not in ids
    )
    with pytest.raises(InvalidInputError) as err:
        core.select([ids[0], other])
    assert err.value.reason == ReasonCode.UNKNOWN_TASK
    assert err.value.message.startswith(f"task(s) {other} not in suite 'core' (its tasks: ")
    assert "\n" not in err.value.message
