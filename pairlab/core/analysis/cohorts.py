"""Paired cohort analysis: episodes -> cohorts -> effects with bootstrap intervals.

DESIGN 7. A *cohort* is the episodes that may be compared: same client, client
version, model, model version, task and stratum. Missing versions/models form
their own ``"unknown"`` cohort and are flagged; cohorts are never pooled.

Within a cohort, episodes are paired by ``pairId``. Contrasts: every treated arm
against ``baseline`` and the ladder optimizer -> retrieval -> full (retrieval vs
optimizer, full vs retrieval), each only when both arms are present. The effect
of a metric is the mean paired difference ``treatment - control`` (negative =
fewer tokens / calls / ms / dollars). A pair with a null in that metric for
either arm is left out of that metric and counted in ``excludedNull``; null is
never read as 0. Episodes marked ``excluded`` (pre-registered rules) are left
out and counted.

Resampling and seeds (the determinism contract). The resample of a set of
pairs is a function of ``(run id, cohort key, the sorted pairIds resampled)``
only: that tuple is hashed (SHA-256) into the generator's seed. Every
(contrast, metric) column observed in the same pairs - normally all columns,
in all the cohort's pairs - shares that resample, so one matrix product gives
them all (a joint bootstrap, see :mod:`pairlab.core.stats.bootstrap`). The
metric therefore enters the seed through the pairs it has: a metric with a
null in some pair resamples only its own pairs, from its own seed. Drawing a
separate resample per metric (issue 2's "seed from run id + cohort + metric",
taken literally) would cost 55 draws per cohort instead of one and lose the
coherence between a total and its parts; the guarantees that matter hold
either way: seeds never depend on values, number spelling, row order or other
cohorts, and cohorts run in parallel threads without changing any result.

The gate: a cohort needs ``min_pairs`` complete pairs (every arm of the cohort
present and not excluded). Below it the cohort is ``"insufficient"``: its pair
count, per-arm correctness (descriptive) and join coverage are reported, its
``effects`` and paired correctness are empty lists (no claim). Inside a
sufficient cohort, an effect with fewer than ``min_pairs`` non-null pairs
reports its estimate with null interval bounds and is never a win.

Two intervals per effect: the seed's percentile bootstrap (``ciLow``/``ciHigh``,
the reported 95% interval; BCa on request) and the *decision interval*
(``decisionLow``/``decisionHigh``, :mod:`pairlab.core.stats.studentized`) at the
study plan's alpha, with the p-values that invert it. Which effects are wins is
the plan's decision rule (:mod:`pairlab.core.analysis.decisions`): the decision interval,
multiplicity control per family, the pre-registered minimum pairs, and
correctness that did not regress (on the pairs where both arms were graded, the
treatment's correct rate is not below the control's; with no graded pair,
non-regression is unproven and there is no win).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

import numpy as np
import polars as pl

from pairlab.core.analysis.engine import Job, Settings, empty_results, run_cohorts
from pairlab.core.analysis.result import (
    KEY_COLUMNS,
    METRICS,
    CohortAnalysis,
    Contrast,
    effects_frame,
)
from pairlab.core.analysis.study_plan import ResolvedPlan, default_plan
from pairlab.core.analysis.table import render_cohort_table
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.quota.consumption import (
    QUOTA_METRICS,
    QUOTA_PRECISION_COLUMNS,
    QUOTA_REASON_COLUMNS,
    record_columns,
)
from pairlab.core.schemas.episode import ARMS, EpisodeRecord
from pairlab.core.stats import kernels
from pairlab.core.stats.bootstrap import Method

__all__ = [
    "FRAME_SCHEMA",
    "KEY_COLUMNS",
    "METRICS",
    "CohortAnalysis",
    "analyse_cohorts",
    "contrasts_of",
    "effects_frame",
    "episodes_frame",
    "order_arms",
    "paired_samples",
    "render_cohort_table",
    "resolve_gate",
    "resolve_min_pairs",
]

MIN_PAIRS_ENV: Final = "TOKEN_OPTIMIZER_EVAL_MIN_PAIRS"
DEFAULT_MIN_PAIRS: Final = 5
UNKNOWN: Final = "unknown"
DEFAULT_STRATUM: Final = "default"
# Frames of this many episodes start loading the compiled loops at once (cohort_engine
# uses them from COMPILED_MIN_COHORTS resampled cohorts on).
WARM_UP_ROWS: Final = 20_000
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
    "excluded": pl.Boolean(),
    "correct": pl.Boolean(),
    **{name: pl.Float64() for name in METRICS},
    # issue 16: per-episode quota consumption (percentage points) of the account-wide
    # windows, null with a reason column when unusable; not (yet) analysed metrics.
    **{name: pl.Float64() for name in QUOTA_METRICS},
    **{name: pl.String() for name in QUOTA_REASON_COLUMNS},
    **{name: pl.Float64() for name in QUOTA_PRECISION_COLUMNS},
}


def resolve_min_pairs(value: int | None) -> int:
    """The cohort gate: ``value``, else $TOKEN_OPTIMIZER_EVAL_MIN_PAIRS, else 5; < 2 is an error."""
    source = "--min-pairs"
    if value is None:
        raw = os.environ.get(MIN_PAIRS_ENV)
        if raw is None or raw.strip() == "":
            return DEFAULT_MIN_PAIRS
        source = MIN_PAIRS_ENV
        try:
            value = int(raw.strip())
        except ValueError as exc:
            raise InvalidInputError(
                f"{MIN_PAIRS_ENV}={raw!r} is not an integer", reason=ReasonCode.INVALID_MIN_PAIRS
            ) from exc
    if value < 2:
        raise InvalidInputError(
            f"{source}={value}: a cohort gate needs at least 2 pairs",
            reason=ReasonCode.INVALID_MIN_PAIRS,
        )
    return value


def resolve_gate(value: int | None, plan: ResolvedPlan) -> int:
    """The gate of an analysis under ``plan``: ``value``, else
    $TOKEN_OPTIMIZER_EVAL_MIN_PAIRS, else the plan's pre-registered minimum pairs."""
    if value is None and not os.environ.get(MIN_PAIRS_ENV, "").strip():
        return plan.plan.min_pairs
    return resolve_min_pairs(value)


def episodes_frame(records: Iterable[EpisodeRecord]) -> pl.DataFrame:
    """The analysis columns of ``records`` as a frame with :data:`FRAME_SCHEMA` (nulls kept)."""
    columns: dict[str, list[object]] = {name: [] for name in FRAME_SCHEMA}
    for record in records:
        for name, attr in _TEXT_ATTRS.items():
            columns[name].append(getattr(record, attr))
        columns["excluded"].append(record.excluded)
        columns["correct"].append(record.correct)
        for name, attr in _METRIC_ATTRS.items():
            value = getattr(record, attr)
            columns[name].append(None if value is None else float(value))
        for name, quota_value in record_columns(record).items():
            columns[name].append(quota_value)
    return pl.DataFrame(columns, schema=FRAME_SCHEMA)


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


def _col(metric: str, arm: str) -> str:
    return f"{metric}@{arm}"


def _diff(contrast: Contrast, metric: str) -> str:
    return f"{contrast.treatment}-{contrast.control}:{metric}"


def _check_frame(frame: pl.DataFrame) -> pl.DataFrame:
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


def _validate_settings(min_pairs: int, n_resamples: int, confidence: float, method: str) -> None:
    if min_pairs < 2:
        raise InvalidInputError(
            f"min_pairs={min_pairs}: a cohort gate needs at least 2 pairs",
            reason=ReasonCode.INVALID_MIN_PAIRS,
        )
    if n_resamples < 100:
        raise InvalidInputError(f"n_resamples={n_resamples}: use at least 100 resamples")
    if not 0.5 <= confidence < 1.0:
        raise InvalidInputError(f"confidence={confidence}: must be in [0.5, 1)")
    if method not in ("percentile", "bca"):
        raise InvalidInputError(f"unknown bootstrap method {method!r} (percentile or bca)")


def analyse_cohorts(
    data: pl.DataFrame | Iterable[EpisodeRecord],
    *,
    run_id: str,
    min_pairs: int,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    method: Method = "percentile",
    workers: int | None = None,
    plan: ResolvedPlan | None = None,
) -> CohortAnalysis:
    """Analyse every cohort of ``data`` (records, or a frame shaped like :func:`episodes_frame`).

    ``min_pairs`` is the gate of this analysis; ``plan`` the study plan whose
    decision rule labels the effects (default: :func:`default_plan` with the
    seed's default minimum, $TOKEN_OPTIMIZER_EVAL_MIN_PAIRS else 5). A gate below
    the plan's minimum makes the analysis exploratory.
    """
    _validate_settings(min_pairs, n_resamples, confidence, method)
    if (
        isinstance(data, pl.DataFrame)
        and data.height >= WARM_UP_ROWS
        and kernels.compiled_enabled()
    ):
        # likely a large analysis: load the compiled loops while polars pairs the episodes
        kernels.warm_up_in_background()
    if plan is None:
        plan = ResolvedPlan.of(default_plan(resolve_min_pairs(None)), "default")
    wide, summary, arms, contrasts = _prepare(data)
    settings = Settings(
        run_id=run_id,
        contrasts=contrasts,
        min_pairs=min_pairs,
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        decision_confidence=1.0 - plan.plan.alpha,
    )
    return _analyse_wide(wide, summary, arms=arms, settings=settings, plan=plan, workers=workers)


def _prepare(
    data: pl.DataFrame | Iterable[EpisodeRecord],
) -> tuple[pl.DataFrame, pl.DataFrame, list[str], list[Contrast]]:
    """Cohort keys filled, exclusions counted, pairs joined side by side (one row per pair)."""
    frame = _check_frame(data if isinstance(data, pl.DataFrame) else episodes_frame(data))
    key = list(KEY_COLUMNS)
    base = frame.lazy().with_columns(
        pl.col("clientVersion", "model", "modelVersion").fill_null(UNKNOWN),
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
    wide = _pair_frame(kept, key, arms, contrasts).collect()
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
    wide, _summary, _arms, contrasts = _prepare(data)
    found = []
    for _, group in wide.group_by("cohort", maintain_order=True):
        key = {k: group[k][0] for k in KEY_COLUMNS}
        for c in contrasts:
            both = group.filter(pl.col(f"both:{c.label}"))
            if both.height == 0:
                continue
            diff = both[_diff(c, metric)]
            kept = both.filter(diff.is_not_null())
            found.append(
                PairedSample(
                    key=key,
                    contrast=c,
                    metric=metric,
                    diffs=kept[_diff(c, metric)].to_numpy().astype(np.float64),
                    control=kept[_col(metric, c.control)].to_numpy().astype(np.float64),
                    excluded_null=both.height - kept.height,
                )
            )
    return found


def _pair_frame(
    kept: pl.LazyFrame, key: list[str], arms: list[str], contrasts: list[Contrast]
) -> pl.LazyFrame:
    """One row per (cohort, pairId), arms joined side by side, diffs computed (lazy)."""
    wide = kept.select([*key, "pairId"]).unique()
    for arm in arms:
        side = kept.filter(pl.col("arm") == arm).select(
            *key,
            "pairId",
            pl.lit(True).alias(_col("present", arm)),
            pl.col("correct").alias(_col("correct", arm)),
            *[pl.col(m).alias(_col(m, arm)) for m in METRICS],
        )
        wide = wide.join(side, on=[*key, "pairId"], how="left")
    present = [pl.col(_col("present", a)).fill_null(False) for a in arms]
    cohort_has = [p.any().over(key) for p in present]
    n_arms = pl.sum_horizontal([h.cast(pl.Int32) for h in cohort_has])
    complete = pl.all_horizontal([p | ~h for p, h in zip(present, cohort_has, strict=True)]) & (
        n_arms >= 2
    )
    diffs = [
        (pl.col(_col(m, c.treatment)) - pl.col(_col(m, c.control))).alias(_diff(c, m))
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
            *[p.alias(_col("present", a)) for p, a in zip(present, arms, strict=True)],
        )
        .with_columns(pl.concat_str(key, separator="\x1f").rle_id().alias("cohort"))
    )


def _analyse_wide(
    wide: pl.DataFrame,
    summary: pl.DataFrame,
    *,
    arms: list[str],
    settings: Settings,
    plan: ResolvedPlan,
    workers: int | None,
) -> CohortAnalysis:
    key = list(KEY_COLUMNS)
    contrasts, min_pairs = settings.contrasts, settings.min_pairs
    n_c, n_m = len(contrasts), len(METRICS)
    # Per-cohort aggregates in one polars pass.
    aggs: list[pl.Expr] = [pl.len().alias("rows"), pl.col("complete").sum().alias("pairs")]
    for a in arms:
        graded = pl.col(_col("present", a)) & pl.col(_col("correct", a)).is_not_null()
        aggs.append(graded.sum().alias(f"graded:{a}"))
        aggs.append((graded & pl.col(_col("correct", a))).sum().alias(f"right:{a}"))
        aggs.append(pl.col(_col("present", a)).any().alias(f"has:{a}"))
    for c in contrasts:
        ct, cc = pl.col(_col("correct", c.treatment)), pl.col(_col("correct", c.control))
        both = pl.col(f"both:{c.label}") & ct.is_not_null() & cc.is_not_null()
        for cell, expr in (("a", ct & cc), ("b", ct & ~cc), ("c", ~ct & cc), ("d", ~ct & ~cc)):
            aggs.append((both & expr).sum().alias(f"{cell}:{c.label}"))
        for m in METRICS:
            d = pl.col(_diff(c, m))
            aggs.append(d.is_not_null().sum().alias(f"n:{c.label}:{m}"))
            aggs.append(
                (pl.col(f"both:{c.label}") & d.is_null()).sum().alias(f"null:{c.label}:{m}")
            )
    per = wide.group_by("cohort", maintain_order=True).agg(*key_first(key), *aggs)
    cohorts = summary.join(per, on=key, how="left").sort(key)
    k = cohorts.height

    def ints(name: str) -> np.ndarray:
        return cohorts[name].fill_null(0).to_numpy().astype(np.int64)

    pairs = ints("pairs")
    has = (
        np.stack([cohorts[f"has:{a}"].fill_null(False).to_numpy() for a in arms], axis=1)
        if arms
        else np.zeros((k, 0), bool)
    )
    ok = pairs >= min_pairs
    applies = np.zeros((k, n_c), dtype=bool)
    for j, c in enumerate(contrasts):
        applies[:, j] = has[:, arms.index(c.treatment)] & has[:, arms.index(c.control)]
    n_eff = np.zeros((k, n_c, n_m), dtype=np.int64)
    null_eff = np.zeros((k, n_c, n_m), dtype=np.int64)
    for j, c in enumerate(contrasts):
        for i, m in enumerate(METRICS):
            n_eff[:, j, i] = ints(f"n:{c.label}:{m}")
            null_eff[:, j, i] = ints(f"null:{c.label}:{m}")
    cells = {
        cell: np.stack([ints(f"{cell}:{c.label}") for c in contrasts], axis=1)
        if contrasts
        else np.zeros((k, 0), np.int64)
        for cell in "abcd"
    }
    results = empty_results(k, n_c)
    notes: list[list[str]] = [[] for _ in range(k)]
    engine = "none"
    if n_c:
        diffs = wide.select([_diff(c, m) for c in contrasts for m in METRICS]).to_numpy()
        diffs = diffs.astype(np.float64, copy=False).reshape(-1, n_c, n_m)
        rows = cohorts["rows"].fill_null(0).to_numpy().astype(np.int64)
        # ``wide`` rows are sorted by key then pairId, as are ``cohorts``.
        starts = np.concatenate([[0], np.cumsum(rows)[:-1]])
        keys = cohorts.select(key).rows()
        pair_ids = wide["pairId"].to_list()
        jobs: list[Job] = [
            (
                idx,
                keys[idx],
                pair_ids[starts[idx] : starts[idx] + rows[idx]],
                diffs[starts[idx] : starts[idx] + rows[idx]],
                applies[idx],
            )
            for idx in range(k)
            if ok[idx] and rows[idx] > 0  # insufficient cohorts make no claim: no resampling
        ]
        engine = run_cohorts(settings, results, jobs, notes, workers)
    return CohortAnalysis(
        run_id=settings.run_id,
        min_pairs=min_pairs,
        n_resamples=settings.n_resamples,
        confidence=settings.confidence,
        method=settings.method,
        plan=plan,
        keys=cohorts.select(key),
        arms=arms,
        contrasts=contrasts,
        ok=ok,
        pairs=pairs,
        excluded=ints("excluded"),
        join_coverage=np.stack([ints("exact"), ints("fallback"), ints("missing")], axis=1),
        has_arm=has,
        correct=np.stack([ints(f"right:{a}") for a in arms], axis=1)
        if arms
        else np.zeros((k, 0), np.int64),
        graded=np.stack([ints(f"graded:{a}") for a in arms], axis=1)
        if arms
        else np.zeros((k, 0), np.int64),
        applies=applies,
        cells=cells,
        estimate=results["estimate"],
        low=results["low"],
        high=results["high"],
        decision_low=results["decision_low"],
        decision_high=results["decision_high"],
        p_saving=results["p_saving"],
        p_increase=results["p_increase"],
        n=n_eff,
        excluded_null=null_eff,
        notes=notes,
        engine=engine,
    )


def key_first(key: list[str]) -> list[pl.Expr]:
    return [pl.col(c).first() for c in key]
