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
from typing import Final, NoReturn

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
    """Cohort keys filled, exclusions counted, pairs joined side by side (one row per pair).

    The pairs are found on one integer per (cohort key, pairId) (:func:`_with_pair_ids`)
    and each arm's values gathered into their rows (:func:`_pair_rows`), not joined on the
    eight strings (issue 28: at 1M episodes ~1.8 s CPU of string joins and sorts, now ~0.9 s)."""
    frame = check_frame(data if isinstance(data, pl.DataFrame) else episodes_frame(data))
    key = list(KEY_COLUMNS)
    base = frame.lazy().with_columns(
        pl.col("clientVersion", "model", "modelVersion", "intervention").fill_null(UNKNOWN),
        pl.col("stratum").fill_null(DEFAULT_STRATUM),
        pl.col("excluded").fill_null(False),
    )
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
    kept_q = base.filter(~pl.col("excluded")).with_columns(_pair_hash(key).alias(_PAIR))
    summary, kept = pl.collect_all([summary_q, kept_q])
    kept, pairs = _with_pair_ids(kept, key)
    seen = kept["arm"].unique().to_list()
    names = [a for a in seen if a is not None]
    pairs, at = _pair_rows(kept, pairs, key, names)
    if at is None:
        _raise_duplicate(kept.lazy(), key)
    arms = order_arms(seen)
    contrasts = contrasts_of(arms)
    wide = pair_frame(kept, pairs, at, names, key, arms, contrasts).collect()
    return wide, summary, arms, contrasts


def _raise_duplicate(kept: pl.LazyFrame, key: list[str]) -> NoReturn:
    """The error of an arm run twice in a pair, naming the first such (key, pairId, arm)."""
    dups = kept.group_by([*key, "pairId", "arm"]).len().filter(pl.col("len") > 1)
    row = dups.sort([*key, "pairId", "arm"]).collect().row(0, named=True)
    raise InvalidInputError(
        f"pair {row['pairId']!r} has {row['len']} episodes for arm {row['arm']!r} in one cohort; "
        "each arm runs once per pair (mark retried episodes excluded)",
        reason=ReasonCode.MALFORMED_INPUT,
    )


_PAIR: Final = "\x00pair"  # the integer of a (cohort key, pairId), helper column
_ROW: Final = "\x00row"  # a row's number, helper column
_KEY: Final = "\x00key"  # a cohort key's number in the pair frame, helper column


def _pair_hash(key: list[str]) -> pl.Expr:
    return pl.struct(*key, "pairId").hash()


def _with_pair_ids(kept: pl.DataFrame, key: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``kept`` with one integer per (cohort key, pairId) in :data:`_PAIR` (a null key or
    pairId is a value of its own, as group_by has it), and the distinct (key, pairId)s with
    their integer. The integer is the hash of the eight values where the hashes of the
    distinct tuples are distinct (checked: exact, not probable), else their dense rank."""
    pairs = kept.lazy().group_by([*key, "pairId"]).agg(pl.col(_PAIR).first()).collect()
    if pairs[_PAIR].n_unique() < pairs.height:  # two tuples, one hash: rank them instead
        rank = pl.struct(*key, "pairId").rank("dense").cast(pl.UInt64).alias(_PAIR)
        kept = kept.with_columns(rank)
        pairs = kept.lazy().group_by([*key, "pairId"]).agg(pl.col(_PAIR).first()).collect()
    return kept, pairs


def _pair_rows(
    kept: pl.DataFrame, pairs: pl.DataFrame, key: list[str], names: list[str]
) -> tuple[pl.DataFrame, pl.Series | None]:
    """The distinct (key, pairId)s sorted by key then pairId (nulls first), and where each
    arm's episode of each is in ``kept``: ``at[i * n + r]``, arm ``names[i]``'s episode of
    the r-th of the n pairs, null where the pair lacks the arm; ``None`` when an arm runs
    twice in a pair. An episode whose key, pairId or arm has a null is never found: a null
    never pairs (the row of a null pairId or key has no arm present)."""
    n = pairs.height
    ordered = pairs.lazy().sort([*key, "pairId"]).with_row_index(_ROW)
    pairable = pl.all_horizontal(pl.col(*key, "pairId", "arm").is_not_null())
    rows = kept.lazy().with_row_index("at")
    found_q = (
        rows.filter(pairable)
        .select(
            pl.col("arm").replace_strict(names, range(len(names)), return_dtype=pl.UInt64),
            _PAIR,
            "at",
        )
        .join(ordered.select(_PAIR, _ROW), on=_PAIR)
        .select((pl.col("arm") * n + pl.col(_ROW)).alias("slot"), "at")
    )
    twice_q = rows.filter(~pairable).group_by(_PAIR, "arm").len().filter(pl.col("len") > 1)
    keys, found, twice = pl.collect_all([ordered.select(*key, "pairId"), found_q, twice_q])
    if twice.height or found["slot"].n_unique() < found.height:
        return keys, None
    at = pl.repeat(None, n * len(names), dtype=found["at"].dtype, eager=True)
    return keys, at.scatter(found["slot"], found["at"])


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
    kept: pl.DataFrame,
    pairs: pl.DataFrame,
    at: pl.Series,
    names: list[str],
    key: list[str],
    arms: list[str],
    contrasts: list[Contrast],
) -> pl.LazyFrame:
    """One row per (cohort, pairId), arms side by side, diffs computed (lazy).

    ``pairs`` and ``at`` as :func:`_pair_rows` finds them for the arms ``names``: each arm's
    values are gathered from its episodes' rows of ``kept`` into the pairs' order (null
    where a pair lacks the arm; an arm null is never present)."""
    n = pairs.height
    values = kept.select(pl.col("correct", *METRICS).gather(at))
    sides = []
    for arm in arms:
        if arm in names:
            i = names.index(arm)
            sides.append(at.slice(i * n, n).is_not_null().alias(col("present", arm)))
            side = values.slice(i * n, n)
        else:
            sides.append(pl.repeat(False, n, eager=True).alias(col("present", arm)))
            side = values.clear(n)
        sides.extend(side[name].alias(col(name, arm)) for name in ("correct", *METRICS))
    wide = pairs.with_columns(sides)
    # rows of one key are adjacent: a new cohort where any key column changes
    new_key = pl.any_horizontal([pl.col(k).ne_missing(pl.col(k).shift()) for k in key])
    present = [pl.col(col("present", a)) for a in arms]
    cohort_has = [p.any().over(_KEY) for p in present]
    if arms:
        n_arms = pl.sum_horizontal([h.cast(pl.Int32) for h in cohort_has])
        every_arm = pl.all_horizontal([p | ~h for p, h in zip(present, cohort_has, strict=True)])
        complete = every_arm & (n_arms >= 2)
    else:  # every episode excluded: no pair, no arm (cohorts still counted in the summary)
        complete = pl.lit(False)
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
        wide.lazy()
        .with_columns(new_key.cum_sum().alias(_KEY))
        .with_columns(*diffs, *both, complete.alias("complete"))
        .with_columns(pl.concat_str(key, separator="\x1f").rle_id().alias("cohort"))
        .drop(_KEY)
    )


def key_first(key: list[str]) -> list[pl.Expr]:
    return [pl.col(c).first() for c in key]
