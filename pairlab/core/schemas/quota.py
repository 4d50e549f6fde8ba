"""Quota observation (DESIGN 5.4) and continuity between observations."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, AwareDatetime, Field

from pairlab.core.schemas.base import StrictModel

QUOTA_SCHEMA_VERSION = 1


def _check_window(value: str) -> str:
    if value in ("five-hour", "seven-day"):
        return value
    if value.startswith("other:") and value[6:].isdigit():
        return value
    raise ValueError("window must be 'five-hour', 'seven-day' or 'other:<minutes>'")


Window = Annotated[str, AfterValidator(_check_window)]


def classify_window(minutes: float | None) -> str:
    """Classify a window by its length (never by its slot name)."""
    if minutes is None:
        return "other:0"
    m = round(minutes)
    if 295 <= m <= 305:
        return "five-hour"
    if 10070 <= m <= 10090:
        return "seven-day"
    return f"other:{m}"


class Continuity(StrEnum):
    INITIAL = "initial"
    SAME_RESET = "same-reset"
    RESET = "reset"
    UNKNOWN = "unknown"


class QuotaObservation(StrictModel):
    schema_version: Literal[1] = 1
    provider: str = Field(min_length=1)
    window: Window
    used_percent: float | None = Field(default=None, ge=0, le=100)
    source_scale: Literal["percent", "fraction"] = "percent"
    precision_percent: float | None = Field(default=None, ge=0)
    # Absolute instants: a naive time is refused (comparing it with an aware one is
    # never equal, which would turn every observation into a false 'reset').
    resets_at: AwareDatetime | None = None
    reset_id: str | None = None
    observed_at: AwareDatetime
    source: str = Field(min_length=1)
    account: str | None = None


def continuity(previous: QuotaObservation | None, current: QuotaObservation) -> Continuity:
    """DESIGN 5.4: initial / reset / same-reset / unknown."""
    if previous is None:
        return Continuity.INITIAL
    if (
        previous.used_percent is None
        or current.used_percent is None
        or previous.resets_at is None
        or current.resets_at is None
    ):
        return Continuity.UNKNOWN
    if previous.resets_at != current.resets_at:
        return Continuity.RESET
    if current.used_percent >= previous.used_percent:
        return Continuity.SAME_RESET
    return Continuity.UNKNOWN
