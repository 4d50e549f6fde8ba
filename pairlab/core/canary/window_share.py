"""A canary's expected share of what remains of each subscription window, read before
approval (issue 27, item 4).

Before a trial pauses for approval it reads the account's windows now (the profile's
quota probe: a registered account's usage endpoint, the simulator's trial account). For
each window the approver sees:

* **expected** = the trial's whole-trial estimate in percent of the window (its tokens
  over the window's size when the size is known, else the operator's estimate per
  episode × the episodes; unknown otherwise);
* **remaining** = 100 − the reading − its precision (a whole-percent reading r means a
  use in [r, r + 1): what remains is counted at its lower bound, never above 0 below);
* **share of what remains** = expected / remaining;
* a **warning** when expected exceeds remaining: the trial would exhaust the window.

A window whose reading is unknown (the probe failed, an API key) says so: its share of
what remains cannot be checked. Pure: numbers in, lines out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pairlab.core.schemas.quota import QuotaObservation

WHOLE_PERCENT = 1.0


@dataclass(frozen=True)
class WindowShare:
    window: str
    expected_percent: float | None
    used_percent: float | None  # the reading now; None: not read
    precision_percent: float = WHOLE_PERCENT

    @property
    def remaining_percent(self) -> float | None:
        if self.used_percent is None:
            return None
        return max(0.0, 100.0 - self.used_percent - self.precision_percent)

    @property
    def share_of_remaining(self) -> float | None:
        remaining = self.remaining_percent
        if self.expected_percent is None or remaining is None or remaining <= 0:
            return None
        return 100.0 * self.expected_percent / remaining

    @property
    def exceeds(self) -> bool:
        remaining = self.remaining_percent
        return (
            self.expected_percent is not None
            and remaining is not None
            and self.expected_percent > remaining
        )


def window_shares(
    expected: Mapping[str, float | None], readings: Iterable[QuotaObservation]
) -> list[WindowShare]:
    """One share per window of ``expected`` (window -> whole-trial percent), against the
    account-wide readings (model-scoped windows are not the account's)."""
    now = {o.window: o for o in readings if ":" not in o.provider}
    out = []
    for window, percent in expected.items():
        reading = now.get(window)
        out.append(
            WindowShare(
                window=window,
                expected_percent=percent,
                used_percent=None if reading is None else reading.used_percent,
                precision_percent=(reading.precision_percent or WHOLE_PERCENT)
                if reading is not None
                else WHOLE_PERCENT,
            )
        )
    return out


def share_words(share: WindowShare) -> str:
    """What the approver reads of one window's reading (after its expected share)."""
    if share.used_percent is None:
        return "its use now could not be read — the share of what remains cannot be checked"
    remaining = share.remaining_percent
    assert remaining is not None
    words = (
        f"read now: {share.used_percent:g}% used, at least {remaining:g}% remaining (whole-"
        f"percent reading)"
    )
    of_remaining = share.share_of_remaining
    if of_remaining is not None:
        words += f"; the trial would use **{of_remaining:.0f}% of what remains**"
    if share.exceeds and share.expected_percent is not None:
        words += (
            f" — **WARNING: exceeds the remaining window by "
            f"{share.expected_percent - remaining:.1f} points; the trial would exhaust it**"
        )
    return words


__all__ = ["WindowShare", "share_words", "window_shares"]
