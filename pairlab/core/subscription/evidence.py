"""Is a cohort's quota evidence above the windows' precision? (issue 16, item 3)

Subscription windows report whole percents: an episode consuming 0.4 % of a
five-hour window shows 0 or 1, and no comparison of such numbers can establish a
reduction. The canary's rule (DESIGN 9) calls a reduction only when the control
consumed more than the candidate by more than U, the sum of both precisions; as
the candidate consumes at least 0, no reduction can be shown unless the control's
own consumption exceeds U. So, per cohort, window and arm, over its measured
units (episodes, or the scheduled intervals of a quota-aware plan):

* ``units``, ``usable`` (non-null), ``excluded`` and ``excludedByReason`` (null
  consumptions by reason; null is never 0 and never averaged in);
* ``meanConsumptionPct``, ``minConsumptionPct``, ``maxConsumptionPct``,
  ``medianConsumptionPct`` (of the usable units), ``precisionPct`` (the largest);
* ``resolvable``: usable units whose consumption exceeds twice their precision
  (the U of a comparison with an equally precise peer);
* ``belowPrecision``: true when the arm has usable units and none is resolvable
  (as control of a contrast it cannot show a reduction: the report must say so,
  not show a zero effect); null when it has no usable unit (no evidence at all).

Input: a frame with the cohort key columns, ``arm`` and the account-wide window
columns of :mod:`pairlab.core.quota.consumption` (``episodes_frame`` of
:mod:`pairlab.core.analysis.cohorts`, or ``intervals_frame`` of
:mod:`pairlab.core.quota.intervals`). Episodes marked ``excluded`` by the
pre-registered rules are left out, as in the cohort analysis.
"""

from __future__ import annotations

from typing import Final, Literal

import polars as pl

from pairlab.core.analysis.result import KEY_COLUMNS
from pairlab.core.quota.consumption import ACCOUNT_WINDOW_COLUMNS

UNKNOWN: Final = "unknown"  # as the cohort analysis names missing versions/models
DEFAULT_STRATUM: Final = "default"
Unit = Literal["episode", "interval"]

PRECISION_SCHEMA: Final[dict[str, pl.DataType]] = {
    **{name: pl.String() for name in KEY_COLUMNS},
    "unit": pl.String(),
    "window": pl.String(),
    "arm": pl.String(),
    "units": pl.Int64(),
    "usable": pl.Int64(),
    "excluded": pl.Int64(),
    "excludedByReason": pl.List(pl.Struct({"reason": pl.String(), "count": pl.Int64()})),
    "meanConsumptionPct": pl.Float64(),
    "minConsumptionPct": pl.Float64(),
    "maxConsumptionPct": pl.Float64(),
    "medianConsumptionPct": pl.Float64(),
    "precisionPct": pl.Float64(),
    "resolvable": pl.Int64(),
    "belowPrecision": pl.Boolean(),
}


def precision_assessment(frame: pl.DataFrame, *, unit: Unit) -> pl.DataFrame:
    """One row per (cohort, window, arm): is the evidence above the window's precision?"""
    missing = [c for c in (*KEY_COLUMNS, "arm") if c not in frame.columns]
    if missing:
        raise ValueError(f"quota evidence frame lacks columns {missing}")
    kept = frame.filter(~pl.col("excluded").fill_null(False)) if "excluded" in frame else frame
    kept = kept.with_columns(
        pl.col("clientVersion", "model", "modelVersion", "intervention").fill_null(UNKNOWN),
        pl.col("stratum").fill_null(DEFAULT_STRATUM),
    )
    parts = [
        kept.select(
            *KEY_COLUMNS,
            "arm",
            pl.lit(window).alias("window"),
            pl.col(value).cast(pl.Float64).alias("value"),
            pl.col(reason).cast(pl.String).alias("reason"),
            pl.col(precision).cast(pl.Float64).alias("precision"),
        )
        for window, (value, reason, precision) in ACCOUNT_WINDOW_COLUMNS.items()
    ]
    long = pl.concat(parts) if parts else pl.DataFrame()
    value = pl.col("value")
    out = (
        long.group_by([*KEY_COLUMNS, "window", "arm"])
        .agg(
            pl.len().cast(pl.Int64).alias("units"),
            value.is_not_null().sum().cast(pl.Int64).alias("usable"),
            value.is_null().sum().cast(pl.Int64).alias("excluded"),
            pl.col("reason")
            .fill_null("unexplained-null")
            .filter(value.is_null())
            .value_counts(sort=True, name="count")
            .alias("excludedByReason"),
            value.mean().alias("meanConsumptionPct"),
            value.min().alias("minConsumptionPct"),
            value.max().alias("maxConsumptionPct"),
            value.median().alias("medianConsumptionPct"),
            pl.col("precision").filter(value.is_not_null()).max().alias("precisionPct"),
            (value > 2 * pl.col("precision")).sum().cast(pl.Int64).alias("resolvable"),
        )
        .with_columns(
            pl.lit(unit).alias("unit"),
            pl.when(pl.col("usable") == 0)
            .then(pl.lit(None, dtype=pl.Boolean))
            .otherwise(pl.col("resolvable") == 0)
            .alias("belowPrecision"),
        )
        .with_columns(
            pl.col("excludedByReason")
            .list.eval(pl.element().struct.rename_fields(["reason", "count"]))
            .cast(PRECISION_SCHEMA["excludedByReason"])
        )
        .sort([*KEY_COLUMNS, "window", "arm"])
    )
    return out.select([pl.col(c).cast(t) for c, t in PRECISION_SCHEMA.items()])


def precision_json(assessment: pl.DataFrame) -> list[dict[str, object]]:
    """The rows as JSON-ready dicts (``excludedByReason`` as ``{reason: count}``, most
    frequent first, ties by name: the same input always gives the same JSON)."""
    rows = assessment.to_dicts()
    for row in rows:
        counts = sorted(row["excludedByReason"], key=lambda e: (-e["count"], e["reason"]))
        row["excludedByReason"] = {e["reason"]: e["count"] for e in counts}
    return rows


__all__ = ["PRECISION_SCHEMA", "precision_assessment", "precision_json"]
