"""The frozen trial manifest (DESIGN 9): everything fixed before a canary runs.

Written to ``trials/manifest.json`` and shown for approval before anything runs;
a resumed trial keeps it. It is pairlab's record of the trial (strata, budget,
simulator effects, the planned order), richer than the comparison artifact,
which carries only what loom's schema holds.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

_NOT_ID = re.compile(r"[^A-Za-z0-9._:-]")


def to_identifier(text: str) -> str:
    """An artifact identifier (1-160 bytes of ``[A-Za-z0-9._:-]``) from free text."""
    cleaned = _NOT_ID.sub("-", text)[:160]
    return cleaned if cleaned.strip(".") else "unknown"


class FrozenModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FrozenFixture(FrozenModel):
    task_id: str
    fixture: str
    fixture_digest: str  # sha256:<hex> over the fixture tree (sorted relative paths)
    acceptance_contract_id: str  # sha256:<hex> of the task's grader definitions
    required_checks: list[str]  # grader names


class ArmRevision(FrozenModel):
    arm: Literal["baseline", "candidate"]
    revision: str
    sim_effects: dict[str, Any] | None = None  # simulator only: the effect configuration


class Assignment(FrozenModel):
    provider: str
    model: str
    effort: str | None = None


class PlannedRun(FrozenModel):
    episode_id: str
    pair_id: str
    task_id: str
    stratum: str
    repetition: int
    order: int
    arm: str


class Budget(FrozenModel):
    episodes: int
    estimated_tokens_per_episode: int
    estimated_tokens_total: int
    window_budget_tokens: dict[str, int | None]  # window -> budget (simulator); None = unknown
    estimated_quota_percent: dict[str, float | None]  # window -> whole-trial estimate
    # the operator's estimate per episode, in points of a window whose size is unknown
    estimated_window_percent_per_episode: float | None = None


class TrialManifest(FrozenModel):
    schema_version: Literal[1] = 1
    trial_id: str
    created_at: datetime
    intervention_id: str
    changed_dimensions: list[str]
    baseline: ArmRevision
    candidate: ArmRevision
    source_revision: str
    environment_id: str
    environment: dict[str, str]
    fixtures: list[FrozenFixture]
    review_dimensions: list[str]
    assignments: list[Assignment]
    strata: list[str]
    strata_meaning: dict[str, str]
    repetitions: int
    seed: int
    quota_interval_s: float
    unrelated_concurrent_use: bool | None
    budget: Budget
    planned: list[PlannedRun]
    # the decision, recorded once made (who, when, note, budget acknowledgement); the
    # frozen fields above never change
    approval: dict[str, Any] | None = None

    def fixture(self, task_id: str) -> FrozenFixture:
        return next(f for f in self.fixtures if f.task_id == task_id)

    def revision(self, arm: str) -> str:
        return self.baseline.revision if arm == "baseline" else self.candidate.revision
