"""Quota units: what one arm consumed over one measured interval, in one cohort.

A *unit* is an episode (its ``quotaBefore`` → ``quotaAfter``) or, in a
quota-aware run, a scheduled quota interval (``quotaStart`` → ``quotaEnd``,
``quota-intervals.jsonl``) holding K episodes of one arm. Units pair like the
episodes of a pair: by ``pairId`` for episodes, by ``quotaPairId`` for intervals
(the arms' intervals of one block). Each unit keeps its snapshots (for the
subscription verdict) and the account-wide windows' flat consumption columns
(null + reason, never 0; :mod:`pairlab.core.quota.consumption`).

An interval takes its cohort key from its first recorded episode, as
:func:`pairlab.core.quota.intervals.intervals_frame` does; it is excluded when
one of its episodes was excluded by the pre-registered rules (the interval then
held other work than its peers), as such episodes are in the cohort analysis.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import polars as pl

from pairlab.core.analysis.metrics import KEY_COLUMNS
from pairlab.core.analysis.pairing import DEFAULT_STRATUM, UNKNOWN
from pairlab.core.quota.consumption import (
    QUOTA_METRICS,
    QUOTA_PRECISION_COLUMNS,
    QUOTA_REASON_COLUMNS,
    account_window_columns,
    record_columns,
)
from pairlab.core.quota.intervals import QuotaIntervalRecord
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.schemas.quota import QuotaObservation

Unit = Literal["episode", "interval"]
CohortKey = tuple[str, ...]  # the values of KEY_COLUMNS, unknowns filled


@dataclass(frozen=True)
class QuotaUnit:
    key: CohortKey
    arm: str
    pair_id: str
    unit_id: str
    excluded: bool
    start: Sequence[QuotaObservation] | None
    end: Sequence[QuotaObservation] | None
    unrelated_concurrent_use: bool | None
    columns: Mapping[str, float | str | None]


def cohort_key(record: EpisodeRecord) -> CohortKey:
    """The record's cohort key as the cohort analysis fills it (unknown / default)."""
    return (
        record.client,
        record.client_version or UNKNOWN,
        record.model or UNKNOWN,
        record.model_version or UNKNOWN,
        record.task_id,
        record.stratum or DEFAULT_STRATUM,
        record.intervention_key or UNKNOWN,
    )


def episode_units(records: Iterable[EpisodeRecord]) -> list[QuotaUnit]:
    return [
        QuotaUnit(
            key=cohort_key(r),
            arm=r.arm,
            pair_id=r.pair_id,
            unit_id=r.episode_id,
            excluded=r.excluded,
            start=r.quota_before,
            end=r.quota_after,
            unrelated_concurrent_use=r.unrelated_concurrent_quota_use,
            columns=record_columns(r),
        )
        for r in records
    ]


def interval_units(
    intervals: Iterable[QuotaIntervalRecord], records: Mapping[str, EpisodeRecord]
) -> list[QuotaUnit]:
    """One unit per interval with at least one recorded episode (else it has no cohort)."""
    found = []
    for interval in intervals:
        held = [records[e] for e in interval.episode_ids if e in records]
        if not held:
            continue
        observed = bool(interval.quota_start) or bool(interval.quota_end)
        found.append(
            QuotaUnit(
                key=cohort_key(held[0]),
                arm=interval.arm,
                pair_id=interval.quota_pair_id,
                unit_id=interval.interval_id,
                excluded=any(r.excluded for r in held),
                start=interval.quota_start,
                end=interval.quota_end,
                unrelated_concurrent_use=interval.unrelated_concurrent_quota_use,
                columns=account_window_columns(interval.quota_consumption or [], observed),
            )
        )
    return found


def run_units(
    records: Sequence[EpisodeRecord], intervals: Sequence[QuotaIntervalRecord]
) -> tuple[Unit, list[QuotaUnit]]:
    """A quota-aware run's intervals, else its episodes."""
    if intervals:
        return "interval", interval_units(intervals, {r.episode_id: r for r in records})
    return "episode", episode_units(records)


UNITS_SCHEMA: Final[dict[str, pl.DataType]] = {
    **{name: pl.String() for name in KEY_COLUMNS},
    "arm": pl.String(),
    "pairId": pl.String(),
    "unitId": pl.String(),
    "excluded": pl.Boolean(),
    **{name: pl.Float64() for name in QUOTA_METRICS},
    **{name: pl.String() for name in QUOTA_REASON_COLUMNS},
    **{name: pl.Float64() for name in QUOTA_PRECISION_COLUMNS},
}


def units_frame(units: Iterable[QuotaUnit]) -> pl.DataFrame:
    """One row per unit (cohort key, arm, pair, flat window columns); nulls kept."""
    columns: dict[str, list[object]] = {name: [] for name in UNITS_SCHEMA}
    for unit in units:
        for name, value in zip(KEY_COLUMNS, unit.key, strict=True):
            columns[name].append(value)
        columns["arm"].append(unit.arm)
        columns["pairId"].append(unit.pair_id)
        columns["unitId"].append(unit.unit_id)
        columns["excluded"].append(unit.excluded)
        for name in (*QUOTA_METRICS, *QUOTA_REASON_COLUMNS, *QUOTA_PRECISION_COLUMNS):
            columns[name].append(unit.columns.get(name))
    return pl.DataFrame(columns, schema=UNITS_SCHEMA)


__all__ = [
    "UNITS_SCHEMA",
    "CohortKey",
    "QuotaUnit",
    "Unit",
    "cohort_key",
    "episode_units",
    "interval_units",
    "run_units",
    "units_frame",
]
