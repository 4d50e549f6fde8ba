"""Freezing a run's study plan when it starts (DESIGN 7): ``<run>/plan.json``.

A new run resolves its plan (an explicit file, else ``catalog/suites/<suite>.plan.yaml``,
else the default plan) and writes it, with its SHA-256, beside ``schedule.json``
before the first episode. A resumed run resolves the plan again and is refused
(``plan-changed``, exit 2) when it differs from the frozen one: a pre-registered
plan cannot change once episodes have been observed.
"""

from __future__ import annotations

from pathlib import Path

from pairlab.adapters.paths import catalog_dir
from pairlab.adapters.run.directory import RunDir, write_atomic
from pairlab.core.analysis.cohorts import resolve_min_pairs
from pairlab.core.analysis.study_plan import (
    FROZEN_PLAN_NAME,
    ResolvedPlan,
    check_unchanged,
    frozen_plan_bytes,
    plan_path,
    read_frozen_plan,
    resolve_plan,
)


def current_plan(suite_id: str, explicit: str | None) -> ResolvedPlan:
    """The plan a run of ``suite_id`` would use now (a plan inside the catalog is recorded
    by its path relative to the catalog, the same on every machine)."""
    catalog = catalog_dir()
    plan = resolve_plan(
        Path(explicit) if explicit else None, plan_path(catalog, suite_id), resolve_min_pairs(None)
    )
    if plan.path is not None:
        try:
            inside = Path(plan.path).resolve().relative_to(catalog.resolve())
        except ValueError:
            return plan
        return plan.model_copy(update={"path": f"catalog/{inside.as_posix()}"})
    return plan


def freeze_plan(run_dir: RunDir, suite_id: str, explicit: str | None) -> ResolvedPlan:
    """Write the run's plan at its start, or check a resumed run's plan is unchanged."""
    plan = current_plan(suite_id, explicit)
    frozen_path = run_dir.path / FROZEN_PLAN_NAME
    if frozen_path.exists():
        frozen = read_frozen_plan(frozen_path)
        check_unchanged(frozen, plan, run_dir.run_id)
        return frozen
    write_atomic(frozen_path, frozen_plan_bytes(plan))
    return plan
