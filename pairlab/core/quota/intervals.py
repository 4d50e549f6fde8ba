"""Scheduled quota intervals of a quota-aware evidence plan (issue 16, item 3).

Whole-percent windows cannot resolve one episode's consumption. A quota-aware plan
groups the repetitions of a task into blocks of ``k``; inside a block each arm
runs its ``k`` episodes back to back in one scheduled interval of fixed length
(the canary's equal scheduled intervals, DESIGN 9), the arms one after another in
the block's Williams order. An interval's start and end snapshots measure what
the arm consumed over its ``k`` episodes; the intervals of one block (a *quota
pair*, ``quotaPairId``) are compared with each other like the episodes of a pair.

This module holds the interval record (``quota-intervals.jsonl``: one JSON
object per line, camelCase, nulls kept) and its flat frame; the flow fills it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Final, Literal

import polars as pl
from pydantic import AwareDatetime, Field

from pairlab.core.quota.consumption import (
    QUOTA_METRICS,
    QUOTA_PRECISION_COLUMNS,
    QUOTA_REASON_COLUMNS,
    ConcurrentUse,
    NullReason,
    account_window_columns,
    interval_consumption,
)
from pairlab.core.schemas.base import CamelModel
from pairlab.core.schemas.episode import ConcurrentUseBasis, EpisodeRecord
from pairlab.core.schemas.quota import QuotaConsumption, QuotaObservation

INTERVALS_FILE: Final = "quota-intervals.jsonl"
INTERVALS_DIR: Final = "quota-intervals"


def quota_pair_id(interval_id: str) -> str:
    """``<runId>:<taskId>:q<block>`` of an interval id ``<quotaPairId>:<arm>``."""
    return interval_id.rsplit(":", 1)[0]


class QuotaIntervalRecord(CamelModel):
    schema_version: Literal[1] = 1
    interval_id: str = Field(min_length=1)
    quota_pair_id: str = Field(min_length=1)
    run_id: str
    task_id: str
    arm: str
    order: int = Field(ge=0)  # the arm's position in its block
    episode_ids: list[str]  # planned, in order
    ran_episode_ids: list[str]  # run inside this interval (all of them unless resumed)
    complete: bool  # every planned episode ran inside this one interval
    scheduled_s: float = Field(gt=0)
    started_at: AwareDatetime | None = None
    ended_at: AwareDatetime | None = None
    overrun: bool = False  # the episodes outlasted the scheduled length
    quota_start: list[QuotaObservation] | None = None
    quota_end: list[QuotaObservation] | None = None
    unrelated_concurrent_quota_use: bool | None = None
    concurrent_use_basis: ConcurrentUseBasis | None = None
    quota_consumption: list[QuotaConsumption] | None = None

    def to_json_line(self) -> str:
        return self.model_dump_json(by_alias=True)


def build_interval_record(
    *,
    interval_id: str,
    run_id: str,
    task_id: str,
    arm: str,
    order: int,
    episode_ids: Sequence[str],
    ran_episode_ids: Sequence[str],
    scheduled_s: float,
    started_at: datetime | None,
    ended_at: datetime | None,
    overrun: bool,
    quota_start: list[QuotaObservation] | None,
    quota_end: list[QuotaObservation] | None,
    concurrent_use: ConcurrentUse,
) -> QuotaIntervalRecord:
    """The interval's record; consumption per window by the episode rule, except that an
    interval which did not hold all its planned episodes (a resumed run) measures other
    work than its peers: null, quota-interval-mismatch, for every window."""
    complete = list(ran_episode_ids) == list(episode_ids)
    consumption = interval_consumption(quota_start, quota_end, concurrent_use.unrelated)
    if not complete:
        consumption = [
            QuotaConsumption(
                provider=c.provider,
                window=c.window,
                precision_percent=c.precision_percent,
                reason=str(NullReason.QUOTA_INTERVAL_MISMATCH),
                started_at=c.started_at,
                ended_at=c.ended_at,
            )
            for c in consumption
        ]
    return QuotaIntervalRecord(
        interval_id=interval_id,
        quota_pair_id=quota_pair_id(interval_id),
        run_id=run_id,
        task_id=task_id,
        arm=arm,
        order=order,
        episode_ids=list(episode_ids),
        ran_episode_ids=list(ran_episode_ids),
        complete=complete,
        scheduled_s=scheduled_s,
        started_at=started_at,
        ended_at=ended_at,
        overrun=overrun,
        quota_start=quota_start,
        quota_end=quota_end,
        unrelated_concurrent_quota_use=concurrent_use.unrelated,
        concurrent_use_basis=concurrent_use.basis,
        quota_consumption=consumption,
    )


_KEY_FIELDS: Final = ("client", "clientVersion", "model", "modelVersion", "stratum")
INTERVAL_FRAME_SCHEMA: Final[dict[str, pl.DataType]] = {
    "intervalId": pl.String(),
    "quotaPairId": pl.String(),
    "runId": pl.String(),
    "taskId": pl.String(),
    "arm": pl.String(),
    **{name: pl.String() for name in _KEY_FIELDS},
    "episodes": pl.Int64(),
    "complete": pl.Boolean(),
    "overrun": pl.Boolean(),
    "durationS": pl.Float64(),
    **{name: pl.Float64() for name in QUOTA_METRICS},
    **{name: pl.String() for name in QUOTA_REASON_COLUMNS},
    **{name: pl.Float64() for name in QUOTA_PRECISION_COLUMNS},
}


def intervals_frame(
    intervals: Iterable[QuotaIntervalRecord], records: Mapping[str, EpisodeRecord]
) -> pl.DataFrame:
    """One row per interval: its cohort key (from its first recorded episode), the
    account-wide windows' consumption (null + reason, never 0) and precision."""
    columns: dict[str, list[object]] = {name: [] for name in INTERVAL_FRAME_SCHEMA}
    for interval in intervals:
        first = next((records[e] for e in interval.episode_ids if e in records), None)
        row: dict[str, object] = {
            "intervalId": interval.interval_id,
            "quotaPairId": interval.quota_pair_id,
            "runId": interval.run_id,
            "taskId": interval.task_id,
            "arm": interval.arm,
            "client": first.client if first else None,
            "clientVersion": first.client_version if first else None,
            "model": first.model if first else None,
            "modelVersion": first.model_version if first else None,
            "stratum": first.stratum if first else None,
            "episodes": len(interval.ran_episode_ids),
            "complete": interval.complete,
            "overrun": interval.overrun,
            "durationS": (interval.ended_at - interval.started_at).total_seconds()
            if interval.started_at and interval.ended_at
            else None,
        }
        observed = bool(interval.quota_start) or bool(interval.quota_end)
        row.update(account_window_columns(interval.quota_consumption or [], observed))
        for name in INTERVAL_FRAME_SCHEMA:
            columns[name].append(row[name])
    return pl.DataFrame(columns, schema=INTERVAL_FRAME_SCHEMA)


__all__ = [
    "INTERVALS_DIR",
    "INTERVALS_FILE",
    "INTERVAL_FRAME_SCHEMA",
    "QuotaIntervalRecord",
    "build_interval_record",
    "intervals_frame",
    "quota_pair_id",
]
