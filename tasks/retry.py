"""Task decorators shared by the tasks and flows: retry infrastructure errors only
(:func:`infra_task`), or run once (:func:`plain_task`); neither caches nor persists."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from prefect import Task, task
from prefect.cache_policies import NO_CACHE

from pairlab.core.errors import EnvironmentUnavailable, ExecutionError, PublishError

INFRA_RETRIES = 2
INFRA_RETRY_DELAYS_S: list[float] = [1.0, 4.0]

P = ParamSpec("P")
R = TypeVar("R")


def retry_on_infrastructure(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect retry_condition_fn: True only for infrastructure failures."""
    del task, task_run
    try:
        state.result()
    except (EnvironmentUnavailable, ExecutionError, PublishError, OSError):
        return True
    except Exception:
        return False
    return False


def infra_task(name: str) -> Callable[[Callable[P, R]], Task[P, R]]:
    """A task retried (twice, after 1 s and 4 s) on infrastructure errors only, never cached."""
    return task(
        name=name,
        retries=INFRA_RETRIES,
        retry_delay_seconds=INFRA_RETRY_DELAYS_S,
        retry_condition_fn=retry_on_infrastructure,
        cache_policy=NO_CACHE,
        persist_result=False,
    )


def plain_task(name: str) -> Callable[[Callable[P, R]], Task[P, R]]:
    """A task run once (no retry), never cached and its result never persisted: the
    run directory and the store hold what a run keeps, not Prefect's result storage."""
    return task(name=name, cache_policy=NO_CACHE, persist_result=False)
