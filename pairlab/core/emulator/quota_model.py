"""The emulated subscription quota of one account: a 5-hour and a 7-day window.

* A window opens at the account's first request after the previous one ended and
  resets exactly its length later (whole seconds); the first request of a fresh window
  starts it at 0 %.
* Each delivered response consumes ``sum(weight[d] * tokens[d])`` over the usage
  vector's billed dimensions; utilization = consumed / the window's limit, capped at
  100 %. The default weights are proportional to list prices (Anthropic: uncached 1,
  cache read 0.1, 5-minute write 1.25, 1-hour write 2, output 5; OpenAI: uncached 1,
  cached 0.1, output 8, no cache writes), so a cache read moves the quota a tenth as
  much as fresh input.
* A window at 100 % refuses requests (a 429 with the reset as ``retry-after``).

The model keeps the exact fraction; each surface rounds it the way its real source
is written (``quota_surfaces``). Time is passed in (epoch seconds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final, Literal

from pairlab.core.schemas.base import StrictModel
from pairlab.core.schemas.usage import BILLED_DIMENSIONS, UsageVector

FIVE_HOUR_S: Final = 5 * 3600
SEVEN_DAY_S: Final = 7 * 24 * 3600
Provider = Literal["anthropic", "openai"]
WindowName = Literal["five_hour", "seven_day"]


class QuotaWeights(StrictModel):
    uncached_input: float = 1.0
    cache_read: float = 0.1
    cache_write_5m: float = 1.25
    cache_write_1h: float = 2.0
    cache_write_generic: float = 1.25
    output: float = 5.0

    def weigh(self, usage: UsageVector) -> float:
        """Weighted tokens of ``usage``: each billed dimension (reasoning is inside output)
        times its weight; an unobserved dimension adds nothing."""
        return sum(
            float(getattr(self, dim)) * (getattr(usage, dim) or 0) for dim in BILLED_DIMENSIONS
        )


ANTHROPIC_WEIGHTS: Final = QuotaWeights()
OPENAI_WEIGHTS: Final = QuotaWeights(
    cache_write_5m=0.0, cache_write_1h=0.0, cache_write_generic=0.0, output=8.0
)
DEFAULT_WEIGHTS: Final[dict[Provider, QuotaWeights]] = {
    "anthropic": ANTHROPIC_WEIGHTS,
    "openai": OPENAI_WEIGHTS,
}


class AccountPlan(StrictModel):
    """Limits (weighted tokens per window) and weights of one emulated account."""

    five_hour_limit: float = 2_000_000.0
    seven_day_limit: float = 20_000_000.0
    weights: dict[Provider, QuotaWeights] | None = None

    def weights_for(self, provider: Provider) -> QuotaWeights:
        if self.weights and provider in self.weights:
            return self.weights[provider]
        return DEFAULT_WEIGHTS[provider]


class WindowSnapshot(StrictModel):
    window: WindowName
    length_s: int
    utilization: float  # exact fraction 0..1
    consumed: float  # weighted tokens in this window
    limit: float
    resets_at: int | None  # epoch seconds; None before the window's first request


class QuotaSnapshot(StrictModel):
    at: float
    five_hour: WindowSnapshot
    seven_day: WindowSnapshot

    @property
    def windows(self) -> tuple[WindowSnapshot, WindowSnapshot]:
        return (self.five_hour, self.seven_day)


@dataclass
class _Window:
    name: WindowName
    length_s: int
    limit: float
    consumed: float = 0.0
    started_at: int | None = None

    def roll(self, now: float) -> None:
        if self.started_at is not None and now >= self.started_at + self.length_s:
            self.started_at, self.consumed = None, 0.0

    def open(self, now: float) -> None:
        self.roll(now)
        if self.started_at is None:
            self.started_at = math.floor(now)

    def snapshot(self) -> WindowSnapshot:
        return WindowSnapshot(
            window=self.name,
            length_s=self.length_s,
            utilization=min(self.consumed / self.limit, 1.0) if self.limit > 0 else 1.0,
            consumed=self.consumed,
            limit=self.limit,
            resets_at=self.started_at + self.length_s if self.started_at is not None else None,
        )


@dataclass
class AccountQuota:
    plan: AccountPlan = field(default_factory=AccountPlan)
    _windows: tuple[_Window, _Window] = field(init=False)

    def __post_init__(self) -> None:
        self._windows = (
            _Window("five_hour", FIVE_HOUR_S, self.plan.five_hour_limit),
            _Window("seven_day", SEVEN_DAY_S, self.plan.seven_day_limit),
        )

    def snapshot(self, now: float) -> QuotaSnapshot:
        for w in self._windows:
            w.roll(now)
        five, seven = (w.snapshot() for w in self._windows)
        return QuotaSnapshot(at=now, five_hour=five, seven_day=seven)

    def open(self, now: float) -> QuotaSnapshot:
        """A request arrives: start any window that is not running."""
        for w in self._windows:
            w.open(now)
        return self.snapshot(now)

    def exhausted(self, now: float) -> WindowSnapshot | None:
        """The window that refuses requests now (the one resetting last), if any."""
        full = [s for s in self.snapshot(now).windows if s.utilization >= 1.0]
        return max(full, key=lambda s: s.resets_at or 0) if full else None

    def charge(self, provider: Provider, usage: UsageVector, now: float) -> QuotaSnapshot:
        """Consume one delivered response; returns the snapshot after it."""
        cost = self.plan.weights_for(provider).weigh(usage)
        for w in self._windows:
            w.open(now)
            w.consumed += cost
        return self.snapshot(now)


__all__ = [
    "ANTHROPIC_WEIGHTS",
    "DEFAULT_WEIGHTS",
    "FIVE_HOUR_S",
    "OPENAI_WEIGHTS",
    "SEVEN_DAY_S",
    "AccountPlan",
    "AccountQuota",
    "Provider",
    "QuotaSnapshot",
    "QuotaWeights",
    "WindowName",
    "WindowSnapshot",
]
