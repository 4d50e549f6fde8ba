"""Scale-out parameters of an eval run: where its pairs run and how many episodes at once.

Nested under ``EvidenceEvalParams.dispatch`` so the UI renders them as one
section. ``mode="in-process"`` (the default) runs pairs in the flow's own
process; ``mode="work-pool"`` dispatches each pair as a flow run of the
``run-pair`` deployment, so the workers of its work pool share the run (they
must share ``work_dir``: one machine, or a shared volume/NFS mount).

The episode limit is a Prefect global concurrency limit: every episode holds one
slot while it runs, in either mode, so the episodes of all runs (and all
workers) against one provider account never exceed its size.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

EPISODE_LIMIT_ENV = "PAIRLAB_EPISODE_LIMIT"


class DispatchParams(BaseModel):
    """Where pairs run (this process or a work pool) and the per-account episode limit."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["in-process", "work-pool"] = Field(
        "in-process",
        description="in-process: pairs run in this flow; work-pool: each pair is a run-pair flow run",
    )
    deployment: str = Field(
        "run-pair/run-pair",
        description="The run-pair deployment (flow/deployment) for work-pool mode",
    )
    episode_limit: str | None = Field(
        None,
        description=(
            "Global concurrency limit held by each episode, e.g. `pairlab-episodes-<account>` "
            f"(empty = ${EPISODE_LIMIT_ENV}, unset = no limit)"
        ),
    )
    episode_limit_slots: int = Field(
        1,
        ge=1,
        le=1000,
        description="Size of the limit when it is created (an existing one is kept)",
    )
    lease_s: float = Field(
        300, ge=60, le=86_400, description="Slot lease: a dead worker's slot is freed after this"
    )
    redispatch: int = Field(
        1, ge=0, le=5, description="Re-dispatch a pair whose flow run crashed or failed this often"
    )
    poll_s: float = Field(2.0, gt=0, le=60, description="How often the dispatcher polls a pair run")

    def resolved_limit(self) -> str | None:
        """The limit name: the parameter, else the environment; empty means none."""
        name = self.episode_limit or os.environ.get(EPISODE_LIMIT_ENV, "")
        return name.strip() or None
