"""What a format writer hands back: the records it wrote and the truth it implies."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pairlab_simclient.usage_draw import CallUsage

USAGE_DIMENSIONS = (
    "uncached_input",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
    "cache_write_generic",
    "output",
    "reasoning",
)

FILLER = (
    "Looking at the workspace layout first.",
    "Reading the failing module to find the defect.",
    "The helper mishandles an edge case; fixing it.",
    "Running the checks again to confirm the change.",
    "Inspecting the test expectations.",
    "Applying a minimal edit.",
)


@dataclass
class FormatResult:
    session_id: str
    model: str
    vector: dict[str, int | None]
    api_calls: int
    record_paths: list[Path]
    stdout: str
    extra: dict[str, Any] = field(default_factory=dict)


def total_vector(calls: list[CallUsage], present: tuple[str, ...]) -> dict[str, int | None]:
    """Sum the drawn calls over the dimensions a format reports; the others are null."""
    return {
        dim: (sum(getattr(c, dim) for c in calls) if dim in present else None)
        for dim in USAGE_DIMENSIONS
    }


class Clock:
    """Simulated wall time advancing by seeded steps (records need increasing timestamps)."""

    def __init__(self, start: datetime, rng: random.Random) -> None:
        self.now = start
        self._rng = rng

    def tick(self, low_s: float = 0.05, high_s: float = 2.5) -> datetime:
        self.now += timedelta(seconds=self._rng.uniform(low_s, high_s))
        return self.now


def write_jsonl(path: Path, lines: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n")
