"""Retry policy shared by the tasks: retry infrastructure errors only."""

from __future__ import annotations

from typing import Any

from pairlab.core.errors import EnvironmentUnavailable, ExecutionError, PublishError

INFRA_RETRIES = 2
INFRA_RETRY_DELAYS_S = [1, 4]


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
