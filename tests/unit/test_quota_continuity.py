"""Continuity between consecutive quota observations of one window (DESIGN 5.4)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from pairlab.core.schemas.quota import Continuity, QuotaObservation, classify_window, continuity

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RESET = T0 + timedelta(hours=3)


def obs(
    used: float | None, resets_at: datetime | None = RESET, minutes: int = 0
) -> QuotaObservation:
    return QuotaObservation(
        provider="sim",
        window="five-hour",
        used_percent=used,
        precision_percent=1.0,
        resets_at=resets_at,
        observed_at=T0 + timedelta(minutes=minutes),
        source="sim",
    )


def test_first_observation_is_initial() -> None:
    assert continuity(None, obs(10)) == Continuity.INITIAL
    assert continuity(None, obs(None, None)) == Continuity.INITIAL


def test_changed_reset_time_is_reset() -> None:
    assert continuity(obs(80), obs(2, RESET + timedelta(hours=5), 10)) == Continuity.RESET
    assert continuity(obs(2), obs(30, RESET + timedelta(hours=5), 10)) == Continuity.RESET


@pytest.mark.parametrize("after", [10.0, 11.0, 100.0])
def test_same_reset_not_lower_is_same_reset(after: float) -> None:
    assert continuity(obs(10), obs(after, minutes=5)) == Continuity.SAME_RESET


def test_same_instant_in_another_timezone_is_the_same_reset() -> None:
    shifted = RESET.astimezone(timezone(timedelta(hours=-5)))
    assert continuity(obs(10), obs(12, shifted, 5)) == Continuity.SAME_RESET


@pytest.mark.parametrize(
    ("previous", "current"),
    [
        (obs(10), obs(9, minutes=5)),  # lower under the same reset
        (obs(None), obs(10, minutes=5)),
        (obs(10), obs(None, minutes=5)),
        (obs(10, None), obs(12, minutes=5)),
        (obs(10), obs(12, None, 5)),
        (obs(10, None), obs(12, None, 5)),
    ],
    ids=[
        "decrease",
        "prev-used-missing",
        "cur-used-missing",
        "prev-reset-missing",
        "cur-reset-missing",
        "both-reset-missing",
    ],
)
def test_missing_or_decreasing_is_unknown(
    previous: QuotaObservation, current: QuotaObservation
) -> None:
    assert continuity(previous, current) == Continuity.UNKNOWN


@pytest.mark.parametrize(
    ("minutes", "window"),
    [
        (300, "five-hour"),
        (299.6, "five-hour"),
        (10080, "seven-day"),
        (60, "other:60"),
        (None, "other:0"),
    ],
)
def test_windows_are_classified_by_length(minutes: float | None, window: str) -> None:
    assert classify_window(minutes) == window
