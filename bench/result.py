"""The one record every benchmark returns: a measured figure beside its target."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Result:
    name: str  # what was measured, e.g. "aggregate 1M episodes: wall time"
    figure: float  # the measured value
    unit: str  # "s", "MiB", "x", ...
    target: str  # the target as a reader would say it, e.g. "< 30 s"
    passed: bool  # whether the figure meets the target
