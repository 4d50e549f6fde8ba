"""The quota probe contract and what every probe shares.

A probe never raises: when its source is unavailable it returns explicit
unknowns (``used_percent=None``, ``source`` naming the failure) for the windows
it would have reported, never a fabricated value.

An observation states only what its source states (issue 16): the window from
the length the source gives (``other:0`` when it gives none, never a slot name),
the precision the source or its documented format gives (else unknown), a reset
time only when it is an absolute instant (epoch seconds or text with an offset:
``parse_instant``), a reset identity only as the source's own id or its reset
instant. Scoped limits (Claude's ``seven_day_opus``, Codex's other ``limit_id``
buckets) are their own providers (``claude:opus``, ``codex:<limit_id>``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Final, Protocol

from pairlab.core.schemas.quota import (
    Continuity,
    QuotaObservation,
    continuity,
    percent_or_none,
    whole_number_precision,
    window_observation,
)

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


__all__ = [
    "DEFAULT_WINDOWS",
    "QuotaProbe",
    "continuity_by_window",
    "now_utc",
    "percent_or_none",
    "unknown_observations",
    "whole_number_precision",
    "window_observation",
]
