"""Quota observation (DESIGN 5.4) and continuity between observations."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, AwareDatetime, Field, model_validator

from pairlab.core.schemas.base import CamelModel, StrictModel


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


class QuotaConsumption(CamelModel):
    """What one (provider, window) interval consumed, in percentage points (issue 16).

    ``consumption_percent`` is ``after - before`` only when the interval is usable
    (:mod:`pairlab.core.quota.consumption`); otherwise it is null and ``reason``
    says why (a kebab-case code). Never 0 for "unknown"."""

    provider: str = Field(min_length=1)
    window: Window
    consumption_percent: float | None = Field(default=None, ge=0, le=100)
    precision_percent: float | None = Field(default=None, ge=0)
    reason: str | None = None
    reset_id: str | None = None
    started_at: AwareDatetime | None = None
    ended_at: AwareDatetime | None = None

    @model_validator(mode="after")
    def _null_has_a_reason(self) -> QuotaConsumption:
        if (self.consumption_percent is None) == (self.reason is None):
            raise ValueError("a consumption is either a value or null with a reason, not both")
        return self


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


def whole_number_precision(value: float | None) -> float | None:
    """1.0 percentage point for whole-number sources; finer when decimals appear."""
    if value is None:
        return None
    text = repr(float(value))
    decimals = len(text.split(".")[1].rstrip("0")) if "." in text else 0
    return 1.0 if decimals == 0 else 10.0**-decimals


def percent_or_none(value: object, *, scale: float = 1.0) -> float | None:
    """A 0-100 percentage from a JSON number (``scale=100`` for 0-1 fractions)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    pct = float(value) * scale
    return pct if 0.0 <= pct <= 100.0 else None


def window_observation(
    *,
    provider: str,
    window: str,
    used: float | None,
    resets_at: datetime | None,
    observed_at: datetime,
    source: str,
    source_scale: Literal["percent", "fraction"] = "percent",
    precision: float | None = None,
) -> QuotaObservation:
    """One window's observation as every HTTP/text source reports it: the reset instant
    is the reset id; precision from the value's written decimals unless given."""
    return QuotaObservation(
        provider=provider,
        window=window,
        used_percent=used,
        source_scale=source_scale,
        precision_percent=whole_number_precision(used) if precision is None else precision,
        resets_at=resets_at,
        reset_id=resets_at.isoformat() if resets_at else None,
        observed_at=observed_at,
        source=source,
    )
