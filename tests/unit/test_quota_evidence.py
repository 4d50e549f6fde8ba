"""Per-cohort assessment of quota evidence against the windows' precision (issue 16)."""

from __future__ import annotations

import polars as pl

from pairlab.core.subscription.evidence import (
    PRECISION_SCHEMA,
    precision_assessment,
    precision_json,
)


def _frame(rows: list[tuple[str, str, float | None, str | None, float | None]]) -> pl.DataFrame:
    n = len(rows)
    return pl.DataFrame(
        {
            "client": ["sim"] * n,
            "clientVersion": ["1.0.0"] * n,
            "model": ["m"] * n,
            "modelVersion": [None] * n,
            "taskId": [r[0] for r in rows],
            "stratum": [None] * n,
            "intervention": [None] * n,
            "arm": [r[1] for r in rows],
            "excluded": [r[3] == "EXCLUDED" for r in rows],
            "quotaFiveHourConsumptionPct": [r[2] for r in rows],
            "quotaFiveHourNullReason": [None if r[3] == "EXCLUDED" else r[3] for r in rows],
            "quotaFiveHourPrecisionPct": [r[4] for r in rows],
            "quotaSevenDayConsumptionPct": [None] * n,
            "quotaSevenDayNullReason": ["missing-quota-window"] * n,
            "quotaSevenDayPrecisionPct": [None] * n,
        },
        schema_overrides={
            "modelVersion": pl.String,
            "stratum": pl.String,
            "intervention": pl.String,
        },
    )


def _row(out: pl.DataFrame, task: str, arm: str, window: str = "five-hour") -> dict[str, object]:
    found = precision_json(
        out.filter(
            (pl.col("taskId") == task) & (pl.col("arm") == arm) & (pl.col("window") == window)
        )
    )
    assert len(found) == 1
    return found[0]


def test_whole_percent_deltas_are_flagged_below_precision() -> None:
    frame = _frame(
        [
            ("a", "baseline", 1.0, None, 1.0),  # one-episode deltas of 0-1 points
            ("a", "baseline", 0.0, None, 1.0),
            ("a", "baseline", None, "quota-reset-crossing", 1.0),
            ("a", "full", 1.0, None, 1.0),
            ("b", "baseline", 11.0, None, 1.0),  # 10-episode intervals: resolvable
            ("b", "baseline", 2.0, None, 1.0),  # exactly 2 x precision is not beyond it
            ("b", "full", None, "unrelated-concurrent-quota-use", None),
            ("b", "full", 9.0, "EXCLUDED", 1.0),  # pre-registered exclusion: left out
        ]
    )
    out = precision_assessment(frame, unit="interval")
    assert out.schema == pl.Schema(PRECISION_SCHEMA)
    a = _row(out, "a", "baseline")
    assert (a["units"], a["usable"], a["excluded"]) == (3, 2, 1)
    assert a["excludedByReason"] == {"quota-reset-crossing": 1}
    assert a["maxConsumptionPct"] == 1.0 and a["medianConsumptionPct"] == 0.5
    assert a["resolvable"] == 0 and a["belowPrecision"] is True and a["unit"] == "interval"
    assert a["modelVersion"] == "unknown" and a["stratum"] == "default"
    b = _row(out, "b", "baseline")
    assert b["resolvable"] == 1 and b["belowPrecision"] is False
    # no usable unit: no evidence at all, which is not the same as "below precision"
    full = _row(out, "b", "full")
    assert (full["units"], full["usable"], full["belowPrecision"]) == (1, 0, None)
    assert full["maxConsumptionPct"] is None  # never a 0 standing in for the null
    assert full["excludedByReason"] == {"unrelated-concurrent-quota-use": 1}
    week = _row(out, "a", "full", "seven-day")
    assert (
        week["excludedByReason"] == {"missing-quota-window": 1} and week["belowPrecision"] is None
    )


def test_episodes_frame_feeds_it_directly() -> None:
    from pairlab.core.analysis.cohorts import episodes_frame
    from tests.unit.test_quota_consumption import _eval_record

    frame = episodes_frame(
        [_eval_record("baseline", 5, 9, False), _eval_record("full", 5, 6, None)]
    )
    out = precision_json(precision_assessment(frame, unit="episode"))
    five = {r["arm"]: r for r in out if r["window"] == "five-hour"}
    assert (
        five["baseline"]["maxConsumptionPct"] == 4.0 and five["baseline"]["belowPrecision"] is False
    )
    assert five["full"]["excludedByReason"] == {"unrelated-concurrent-quota-use": 1}


def test_reasons_are_listed_in_one_order_whatever_the_row_order() -> None:
    """Tied reasons keep one order (by count, then name): a report re-rendered from the
    same units is the same bytes."""
    rows = [
        ("a", "baseline", None, "unrelated-concurrent-quota-use", None),
        ("a", "baseline", None, "quota-window-saturated", None),
        ("a", "baseline", None, "quota-window-saturated", None),
        ("a", "baseline", None, "unrelated-concurrent-quota-use", None),
        ("a", "baseline", None, "missing-quota-window", None),
        ("a", "baseline", 3.0, None, 1.0),
    ]
    seen = set()
    for shift in range(len(rows)):
        turned = rows[shift:] + rows[:shift]
        (row,) = precision_json(
            precision_assessment(_frame(turned), unit="episode").filter(
                pl.col("window") == "five-hour"
            )
        )
        seen.add(tuple(row["excludedByReason"].items()))
    assert seen == {
        (
            ("quota-window-saturated", 2),
            ("unrelated-concurrent-quota-use", 2),
            ("missing-quota-window", 1),
        )
    }
