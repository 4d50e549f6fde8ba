"""The equal-duration tolerance of quota intervals: max(1 s, 1 % of the longer duration).

Both sides of both boundaries, editing only the candidate's interval ends of the
golden supported artifact (baseline intervals last 10:00:00 -> 10:20:00).
"""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from pairlab.core.verdict import judge_artifact_bytes
from pairlab.core.verdict.quota import equal_durations

BASE: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "compare" / "supported.json").read_text()
)


def _judge(base_slot: tuple[str, str], cand_slot: tuple[str, str]) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    pair = doc["pairs"][0]
    for run, (start, end) in ((pair["baseline"], base_slot), (pair["candidate"], cand_slot)):
        for interval in run["quota_intervals"]:
            interval["start"]["observed_at"] = start
            interval["end"]["observed_at"] = end
    return judge_artifact_bytes(json.dumps(doc).encode()).to_json()


def _mismatch(report: dict[str, Any]) -> bool:
    return "quota-interval-mismatch" in report["reason_codes"]


@pytest.mark.parametrize(
    ("cand_end", "equal"),
    [
        ("2026-03-02T10:50:12Z", True),  # 1212 s vs 1200 s: 12 s <= 12.12 s (1 %)
        ("2026-03-02T10:50:13Z", False),  # 1213 s vs 1200 s: 13 s > 12.13 s
        ("2026-03-02T10:49:48Z", True),  # shorter by 12 s: 12 s <= 12.00 s
        ("2026-03-02T10:49:47.900Z", False),  # shorter by 12.1 s > 12.00 s
    ],
)
def test_relative_tolerance_on_long_intervals(cand_end: str, equal: bool) -> None:
    report = _judge(
        ("2026-03-02T10:00:00Z", "2026-03-02T10:20:00Z"), ("2026-03-02T10:30:00Z", cand_end)
    )
    assert _mismatch(report) is not equal
    assert report["verdict"] == ("supported-candidate" if equal else "inconclusive")


@pytest.mark.parametrize(
    ("cand_end", "equal"),
    [
        ("2026-03-02T10:30:05Z", True),  # 5 s vs 4 s: 1 s <= max(1 s, 0.05 s)
        ("2026-03-02T10:30:05.001Z", False),  # 1.001 s > 1 s
        ("2026-03-02T10:30:04.020Z", True),  # a late "after" observation (20 ms)
    ],
)
def test_absolute_floor_on_short_intervals(cand_end: str, equal: bool) -> None:
    report = _judge(
        ("2026-03-02T10:00:00Z", "2026-03-02T10:00:04Z"), ("2026-03-02T10:30:00Z", cand_end)
    )
    assert _mismatch(report) is not equal


def test_equal_durations_is_symmetric() -> None:
    a, b = timedelta(seconds=100), timedelta(seconds=101, milliseconds=10)  # 1.01 s <= 1.0101 s
    assert equal_durations(a, b) and equal_durations(b, a)
    c = timedelta(seconds=101, milliseconds=20)  # 1.02 s > 1.0102 s
    assert not equal_durations(a, c) and not equal_durations(c, a)
