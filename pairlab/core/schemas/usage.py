"""The normalised provider-native token vector (CLIENTS.md).

Every dimension is an int or ``None``: ``None`` when no record reports it, ``0``
only when a record reports zero. ``reasoning`` is informational and never added
to ``output`` (providers already bill it inside output).
"""

from __future__ import annotations

from typing import Final

from pydantic import Field

from pairlab.core.schemas.base import StrictModel

USAGE_DIMENSIONS: Final = (
    "uncached_input",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
    "cache_write_generic",
    "output",
    "reasoning",
)

# Dimensions that are billed (reasoning is inside output).
BILLED_DIMENSIONS: Final = USAGE_DIMENSIONS[:-1]


def add_nullable(a: int | None, b: int | None) -> int | None:
    """Sum two observations; missing stays missing only when both are missing."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


class UsageVector(StrictModel):
    uncached_input: int | None = Field(default=None, ge=0)
    cache_read: int | None = Field(default=None, ge=0)
    cache_write_5m: int | None = Field(default=None, ge=0)
    cache_write_1h: int | None = Field(default=None, ge=0)
    cache_write_generic: int | None = Field(default=None, ge=0)
    output: int | None = Field(default=None, ge=0)
    reasoning: int | None = Field(default=None, ge=0)

    def __add__(self, other: UsageVector) -> UsageVector:
        return UsageVector(
            **{d: add_nullable(getattr(self, d), getattr(other, d)) for d in USAGE_DIMENSIONS}
        )

    @property
    def cache_write_total(self) -> int | None:
        total: int | None = None
        for d in ("cache_write_5m", "cache_write_1h", "cache_write_generic"):
            total = add_nullable(total, getattr(self, d))
        return total

    @property
    def total(self) -> int | None:
        """Sum of billed dimensions; None when none was observed."""
        total: int | None = None
        for d in BILLED_DIMENSIONS:
            total = add_nullable(total, getattr(self, d))
        return total

    def is_empty(self) -> bool:
        return all(getattr(self, d) is None for d in USAGE_DIMENSIONS)
