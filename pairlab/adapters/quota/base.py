"""The quota probe contract and what every probe shares.

A probe never raises: when its source is unavailable it returns explicit
unknowns (``used_percent=None``, ``source`` naming the failure) for the windows
it would have reported, never a fabricated value.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Final, Literal, Protocol

from pairlab.core.schemas.quota import Continuity, QuotaObservation, continuity

DEFAULT_WINDOWS: Final = ("five-hour", "seven-day")


class QuotaProbe(Protocol):
    """Reads the current subscription quota of one account."""

    name: str

    def snapshot(self) -> list[QuotaObservation]: ...


def now_utc() -> datetime:
    return datetime.now(UTC)


def unknown_observations(
    provider: str,
    source: str,
    reason: str,
    windows: Sequence[str] = DEFAULT_WINDOWS,
    observed_at: datetime | None = None,
) -> list[QuotaObservation]:
    """Explicit unknowns: the probe ran, the value is not known."""
    at = observed_at or now_utc()
    return [
        QuotaObservation(
            provider=provider,
            window=w,
            used_percent=None,
            precision_percent=None,
            observed_at=at,
            source=f"{source}:unavailable:{reason}",
        )
        for w in windows
    ]


def whole_number_precision(value: float | None) -> float | None:
    """1.0 percentage point for whole-number sources; finer when decimals appear."""
    if value is None:
        return None
    text = repr(float(value))
    decimals = len(text.split(".")[1].rstrip("0")) if "." in text else 0
    return 1.0 if decimals == 0 else 10.0**-decimals


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


def percent_or_none(value: object, *, scale: float = 1.0) -> float | None:
    """A 0-100 percentage from a JSON number (``scale=100`` for 0-1 fractions)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    pct = float(value) * scale
    return pct if 0.0 <= pct <= 100.0 else None


def continuity_by_window(
    previous: Iterable[QuotaObservation], current: Iterable[QuotaObservation]
) -> dict[tuple[str, str], Continuity]:
    """DESIGN 5.4 continuity for each (provider, window) of ``current``."""
    last: dict[tuple[str, str], QuotaObservation] = {}
    for obs in previous:
        last[(obs.provider, obs.window)] = obs
    return {
        (obs.provider, obs.window): continuity(last.get((obs.provider, obs.window)), obs)
        for obs in current
    }
