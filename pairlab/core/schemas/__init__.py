"""Versioned wire contracts (pydantic v2, strict, unknown fields rejected)."""

from pairlab.core.schemas.catalog import Grader, Suite, TaskEntry
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.schemas.profile import RunnerProfile
from pairlab.core.schemas.quota import QuotaObservation
from pairlab.core.schemas.usage import UsageVector

__all__ = [
    "EpisodeRecord",
    "Grader",
    "QuotaObservation",
    "RunnerProfile",
    "Suite",
    "TaskEntry",
    "UsageVector",
]
