"""Typed flow parameters: one pydantic model per flow, rendered as a form in the UI."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Arm = Literal["baseline", "optimizer", "retrieval", "full"]


class EvidenceEvalParams(BaseModel):
    """A paired, order-rotated evaluation of the treatment arms against baseline."""

    model_config = ConfigDict(extra="forbid")

    suite: str = Field("core", description="Task suite id under catalog/suites/")
    task_filter: list[str] = Field(
        default_factory=list, description="Only these task ids (empty = every task of the suite)"
    )
    profile: str = Field("sim", description="Runner profile under runner_profiles/")
    model: str | None = Field(
        None, description="Model id passed to the CLI (profile default if empty)"
    )
    repetitions: int = Field(
        5, ge=1, le=200, description="Pairs per task (5 passes the default gate)"
    )
    arms: list[Arm] = Field(
        default_factory=lambda: ["baseline", "optimizer", "retrieval", "full"],
        min_length=2,
        description="Arms to run; baseline is required",
    )
    backend: Literal["local", "docker"] = Field("local", description="Where episodes run")
    include_transcript: bool = Field(
        False, description="Store prompt/stdout/stderr (hashes always)"
    )
    keep_workspaces: bool = Field(
        False, description="Keep episode volumes/directories for debugging"
    )
    min_pairs: int | None = Field(
        None, ge=2, description="Causal gate (default 5 or TOKEN_OPTIMIZER_EVAL_MIN_PAIRS)"
    )
    seed: int = Field(0, ge=0, description="Recorded seed for the schedule and the simulator")
    store: str = Field("pairlab-store", description="Local directory or s3://bucket/prefix")
    on_secret: Literal["redact", "refuse"] = Field(
        "redact", description="Secrets found before publishing"
    )
    concurrency: int = Field(1, ge=1, le=32, description="Pairs run at the same time")
    run_id: str | None = Field(None, description="Resume this run id (empty = new run)")
    work_dir: str = Field(".pairlab/work", description="Local working directory for run staging")
