"""Episodes to pairs, the first stage of the cohort analysis (:mod:`pairlab.core.analysis.cohorts`).

The analysis frame (:data:`FRAME_SCHEMA`: an episode per row, nulls kept), the arms
in the seed's order and the contrasts among them, and the pairing itself: cohort
keys filled (a missing version, model or intervention is ``"unknown"``, a missing stratum
``"default"``), excluded episodes left out and counted, one row per
(cohort, pairId) with the arms side by side and every contrast's paired
difference per metric (null when either arm's value is null). An arm run twice in
one pair is an error, never a silent pick.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from operator import attrgetter
from typing import Final

import numpy as np
import polars as pl

from pairlab.core.analysis.metrics import KEY_COLUMNS, METRICS, Contrast
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.quota.consumption import (
    QUOTA_METRICS,
    QUOTA_PRECISION_COLUMNS,
    QUOTA_REASON_COLUMNS,
    account_window_columns,
    record_columns,
)
from pairlab.core.schemas.episode import ARMS, EpisodeRecord

UNKNOWN: Final = "unknown"
DEFAULT_STRATUM: Final = "default"
LADDER: Final = ("optimizer", "retrieval", "full")

# Frame column (camelCase, as on the wire) -> record attribute, from the record's own aliases.
_ATTR_OF_ALIAS: Final = {(f.alias or n): n for n, f in EpisodeRecord.model_fields.items()}
_METRIC_ATTRS: Final = {m: _ATTR_OF_ALIAS[m] for m in METRICS}
_TEXT_ATTRS: Final = {
    name: _ATTR_OF_ALIAS[name]
    for name in (
        "episodeId",
        "runId",
        "pairId",
        "arm",
        "client",
        "clientVersion",
        "model",
        "modelVersion",
        "taskId",
        "stratum",
        "excludedReason",
        "joinMethod",
    )
}
FRAME_SCHEMA: Final[dict[str, pl.DataType]] = {
    **{name: pl.String() for name in _TEXT_ATTRS},
    "intervention": pl.String(),  # EpisodeRecord.intervention_key
    "excluded": pl.Boolean(),
    "correct": pl.Boolean(),
    **{name: pl.Float64() for name in METRICS},
    # issue 16: per-episode quota consumption (percentage points) of the account-wide
    # windows, null with a reason column when unusable; not (yet) analysed metrics.
    **{name: pl.Float64() for name in QUOTA_METRICS},
    **{name: pl.String() for name in QUOTA_REASON_COLUMNS},
    **{name: pl.Float64() for name in QUOTA_PRECISION_COLUMNS},
}


_ROW_ATTRS: Final = (
    *_TEXT_ATTRS.values(),
    "intervention_key",
    "excluded",
    "correct",
    *_METRIC_ATTRS.values(),
)
_ROW_COLUMNS: Final = (*_TEXT_ATTRS, "intervention", "excluded", "correct", *_METRIC_ATTRS)
_ROW_SCHEMA: Final = {name: FRAME_SCHEMA[name] for name in _ROW_COLUMNS}
_QUOTA_COLUMNS: Final = (*QUOTA_METRICS, *QUOTA_REASON_COLUMNS, *QUOTA_PRECISION_COLUMNS)


def episodes_frame(records: Iterable[EpisodeRecord]) -> pl.DataFrame:
    """The analysis columns of ``records`` as a frame with :data:`FRAME_SCHEMA` (nulls kept).

    One attribute getter per record and a column per field (issue 28: a million records
    spent ~24 s in a per-field loop); the quota columns are derived per record only for
    records that carry quota data, the others share the one value an episode without
    snapshots has (every window ``missing-quota-telemetry``). Streams: ``records`` may be
    a generator, nothing but the columns is kept."""
    get_row = attrgetter(*_ROW_ATTRS)
    get_quota = attrgetter("quota_consumption", "quota_before", "quota_after")
    rows: list[tuple[object, ...]] = []
    add = rows.append
    quota_rows: dict[int, dict[str, float | str | None]] = {}
    for i, record in enumerate(records):
        add(get_row(record))
        consumption, before, after = get_quota(record)  # carries quota data?
        if consumption is not None or before or after:
            quota_rows[i] = record_columns(record)
    # the rows straight into columns (a zip(*rows) transpose cost ~0.3 s per 100,000);
    # metric ints become floats here, as float() makes them (a bad value raises)
    head = pl.DataFrame(rows, schema=_ROW_SCHEMA, orient="row")
    columns = {name: head[name] for name in _ROW_COLUMNS}
    no_quota = account_window_columns([], observed=False)
    for name in _QUOTA_COLUMNS:
        column = [no_quota[name]] * len(rows)
        for i, found in quota_rows.items():
            column[i] = found[name]
        columns[name] = pl.Series(name, column, dtype=FRAME_SCHEMA[name])
    return pl.DataFrame([columns[name] for name in FRAME_SCHEMA])


def order_arms(arms: Iterable[str]) -> list[str]:
    """The arms in the seed's order (baseline, optimizer, retrieval, full), others sorted."""
    known = [a for a in ARMS if a in arms]
    return known + sorted(set(arms) - set(ARMS))


def contrasts_of(arms: Sequence[str]) -> list[Contrast]:
    """Every treated arm vs baseline, then the ladder steps, of the arms present."""
    found = [Contrast(arm, "baseline") for arm in arms if arm != "baseline" and "baseline" in arms]
    for control, treatment in pairwise(LADDER):
        if control in arms and treatment in arms:
            found.append(Contrast(treatment, control))
    return found


def col(metric: str, arm: str) -> str:
    return f"{metric}@{arm}"


def diff_col(contrast: Contrast, metric: str) -> str:
    return f"{contrast.treatment}-{contrast.control}:{metric}"


def check_frame(frame: pl.DataFrame) -> pl.DataFrame:
    missing = [c for c in ("pairId", "arm", "client", "taskId") if c not in frame.columns]
    if missing:
        raise InvalidInputError(f"episode frame lacks columns {missing}")
    filled = frame.with_columns(
        [
            pl.lit(None, dtype=dtype).alias(name)
            for name, dtype in FRAME_SCHEMA.items()
            if name not in frame.columns
        ]
    )
    return filled.select([pl.col(name).cast(dtype) for name, dtype in FRAME_SCHEMA.items()])


def prepare_pairs(
    data: pl.DataFrame | Iterable[EpisodeRecord],
) -> tuple[pl.DataFrame, pl.DataFrame, list[str], list[Contrast]]:
    """Cohort keys filled, exclusions counted, pairs joined side by side (one row per pair)."""
    frame = check_frame(data if isinstance(data, pl.DataFrame) else episodes_frame(data))
    key = list(KEY_COLUMNS)
    base = frame.lazy().with_columns(
        pl.col("clientVersion", "model", "modelVersion", "intervention").fill_null(UNKNOWN),
        pl.col("stratum").fill_null(DEFAULT_STRATUM),
        pl.col("excluded").fill_null(False),
    )
    kept = base.filter(~pl.col("excluded"))
    summary_q = (
        base.group_by(key)
        .agg(
            pl.col("excluded").sum().alias("excluded"),
            (~pl.col("excluded") & (pl.col("joinMethod") == "exact")).sum().alias("exact"),
            (~pl.col("excluded") & (pl.col("joinMethod") == "fallback")).sum().alias("fallback"),
            (~pl.col("excluded") & pl.col("joinMethod").is_null()).sum().alias("missing"),
        )
        .sort(key)
    )
    dup_q = kept.group_by([*key, "pairId", "arm"]).len().filter(pl.col("len") > 1).head(1)
    arms_q = kept.select(pl.col("arm").unique())
    summary, dups, arm_frame = pl.collect_all([summary_q, dup_q, arms_q])
    if dups.height:
        row = dups.row(0, named=True)
        raise InvalidInputError(
            f"pair {row['pairId']!r} has {row['len']} episodes for arm {row['arm']!r} in one cohort; "
            "each arm runs once per pair (mark retried episodes excluded)",
            reason=ReasonCode.MALFORMED_INPUT,
        )
    arms = order_arms(arm_frame["arm"].to_list())
    contrasts = contrasts_of(arms)
    wide = pair_frame(kept, key, arms, contrasts).collect()
    return wide, summary, arms, contrasts


@dataclass(frozen=True)
class PairedSample:
    """One cohort's paired differences of one metric for one contrast (nulls left out)."""

    key: dict[str, str]
    contrast: Contrast
    metric: str
    diffs: np.ndarray
    control: np.ndarray  # the control arm's values on the same pairs
    excluded_null: int


def paired_samples(data: pl.DataFrame | Iterable[EpisodeRecord], metric: str) -> list[PairedSample]:
    """Every cohort's paired differences of ``metric`` for each of its contrasts, paired as
    :func:`analyse_cohorts` pairs them (for variance estimates: ``pairlab power``)."""
    if metric not in METRICS:
        raise InvalidInputError(
            f"unknown metric {metric!r} (one of: {', '.join(METRICS)})",
            reason=ReasonCode.INVALID_INPUT,
        )
    wide, _summary, _arms, contrasts = prepare_pairs(data)
    found = []
    for _, group in wide.group_by("cohort", maintain_order=True):
        key = {k: group[k][0] for k in KEY_COLUMNS}
        for c in contrasts:
            both = group.filter(pl.col(f"both:{c.label}"))
            if both.height == 0:
                continue
            diff = both[diff_col(c, metric)]
            kept = both.filter(diff.is_not_null())
            found.append(
                PairedSample(
                    key=key,
                    contrast=c,
                    metric=metric,
                    diffs=kept[diff_col(c, metric)].to_numpy().astype(np.float64),
                    control=kept[col(metric, c.control)].to_numpy().astype(np.float64),
                    excluded_null=both.height - kept.height,
                )
            )
    return found


def pair_frame(
    kept: pl.LazyFrame, key: list[str], arms: list[str], contrasts: list[Contrast]
) -> pl.LazyFrame:
    """One row per (cohort, pairId), arms joined side by side, diffs computed (lazy)."""
    wide = kept.select([*key, "pairId"]).unique()
    for arm in arms:
        side = kept.filter(pl.col("arm") == arm).select(
            *key,
            "pairId",
            pl.lit(True).alias(col("present", arm)),
            pl.col("correct").alias(col("correct", arm)),
            *[pl.col(m).alias(col(m, arm)) for m in METRICS],
        )
        wide = wide.join(side, on=[*key, "pairId"], how="left")
    present = [pl.col(col("present", a)).fill_null(False) for a in arms]
    cohort_has = [p.any().over(key) for p in present]
    n_arms = pl.sum_horizontal([h.cast(pl.Int32) for h in cohort_has])
    complete = pl.all_horizontal([p | ~h for p, h in zip(present, cohort_has, strict=True)]) & (
        n_arms >= 2
    )
    diffs = [
        (pl.col(col(m, c.treatment)) - pl.col(col(m, c.control))).alias(diff_col(c, m))
        for c in contrasts
        for m in METRICS
    ]
    both = [
        (present[arms.index(c.treatment)] & present[arms.index(c.control)]).alias(f"both:{c.label}")
        for c in contrasts
    ]
    return (
        wide.sort([*key, "pairId"])
        .with_columns(
            *diffs,
            *both,
            complete.alias("complete"),
            *[p.alias(col("present", a)) for p, a in zip(present, arms, strict=True)],
        )
        .with_columns(pl.concat_str(key, separator="\x1f").rle_id().alias("cohort"))
    )


def key_first(key: list[str]) -> list[pl.Expr]:
    return [pl.col(c).first() for c in key]
