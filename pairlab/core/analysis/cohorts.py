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

Stages: the pairing (:mod:`pairlab.core.analysis.pairing`), per-cohort counts in one
polars pass, the resampling (:mod:`pairlab.core.analysis.engine`), the labels and
renderings (:mod:`pairlab.core.analysis.result`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Final

import numpy as np
import polars as pl

from pairlab.core.analysis.engine import Job, Settings, empty_results
from pairlab.core.analysis.engine_pool import run_cohorts
from pairlab.core.analysis.pairing import (
    FRAME_SCHEMA,
    col,
    contrasts_of,
    diff_col,
    episodes_frame,
    key_first,
    order_arms,
    paired_samples,
    prepare_pairs,
)
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
from pairlab.core.schemas.episode import EpisodeRecord
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
# Frames of this many episodes start loading the compiled loops at once (cohort_engine
# uses them from COMPILED_MIN_COHORTS resampled cohorts on).
WARM_UP_ROWS: Final = 20_000


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
    wide, summary, arms, contrasts = prepare_pairs(data)
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


def _cohort_aggregates(
    wide: pl.DataFrame, summary: pl.DataFrame, arms: list[str], contrasts: list[Contrast]
) -> pl.DataFrame:
    """Per cohort in one polars pass (sorted by key): rows, complete pairs, per arm graded,
    correct and present, per contrast the paired-correctness cells a-d, per contrast and
    metric the non-null pairs and the pairs left out for a null."""
    key = list(KEY_COLUMNS)
    aggs: list[pl.Expr] = [pl.len().alias("rows"), pl.col("complete").sum().alias("pairs")]
    for a in arms:
        graded = pl.col(col("present", a)) & pl.col(col("correct", a)).is_not_null()
        aggs.append(graded.sum().alias(f"graded:{a}"))
        aggs.append((graded & pl.col(col("correct", a))).sum().alias(f"right:{a}"))
        aggs.append(pl.col(col("present", a)).any().alias(f"has:{a}"))
    for c in contrasts:
        ct, cc = pl.col(col("correct", c.treatment)), pl.col(col("correct", c.control))
        both = pl.col(f"both:{c.label}") & ct.is_not_null() & cc.is_not_null()
        for cell, expr in (("a", ct & cc), ("b", ct & ~cc), ("c", ~ct & cc), ("d", ~ct & ~cc)):
            aggs.append((both & expr).sum().alias(f"{cell}:{c.label}"))
        for m in METRICS:
            d = pl.col(diff_col(c, m))
            aggs.append(d.is_not_null().sum().alias(f"n:{c.label}:{m}"))
            aggs.append(
                (pl.col(f"both:{c.label}") & d.is_null()).sum().alias(f"null:{c.label}:{m}")
            )
    # ``cohort`` (a run id down the sorted rows) ascends: the groups are slices of ``wide``
    groups = wide.lazy().set_sorted("cohort").group_by("cohort", maintain_order=True)
    per = groups.agg(*key_first(key), *aggs)
    return summary.lazy().join(per, on=key, how="left").sort(key).collect()


def _ints(cohorts: pl.DataFrame, name: str) -> np.ndarray:
    return cohorts[name].fill_null(0).to_numpy().astype(np.int64)


def _per_column(cohorts: pl.DataFrame, names: list[str]) -> np.ndarray:
    """[cohort, name] counts (an empty second axis when there is no name), in one select
    (a select per column cost ~4 ms each: 0.6 s of a 5,000-cohort run for 154 of them)."""
    if not names:
        return np.zeros((cohorts.height, 0), np.int64)
    picked = cohorts.select(pl.col(name).fill_null(0).cast(pl.Int64) for name in names)
    return np.asarray(picked.to_numpy(), dtype=np.int64).reshape(cohorts.height, len(names))


def _resample_jobs(
    wide: pl.DataFrame,
    cohorts: pl.DataFrame,
    contrasts: list[Contrast],
    ok: np.ndarray,
    applies: np.ndarray,
) -> list[Job]:
    """A job per sufficient cohort: its key, pair ids and [pair, contrast, metric] diffs."""
    diffs = wide.select([diff_col(c, m) for c in contrasts for m in METRICS]).to_numpy()
    diffs = diffs.astype(np.float64, copy=False).reshape(-1, len(contrasts), len(METRICS))
    rows = _ints(cohorts, "rows")
    # ``wide`` rows are sorted by key then pairId, as are ``cohorts``.
    starts = np.concatenate([[0], np.cumsum(rows)[:-1]])
    keys = cohorts.select(list(KEY_COLUMNS)).rows()
    pair_ids = wide["pairId"].to_list()
    return [
        (
            idx,
            keys[idx],
            pair_ids[starts[idx] : starts[idx] + rows[idx]],
            diffs[starts[idx] : starts[idx] + rows[idx]],
            applies[idx],
        )
        for idx in range(cohorts.height)
        if ok[idx] and rows[idx] > 0  # insufficient cohorts make no claim: no resampling
    ]


def _analyse_wide(
    wide: pl.DataFrame,
    summary: pl.DataFrame,
    *,
    arms: list[str],
    settings: Settings,
    plan: ResolvedPlan,
    workers: int | None,
) -> CohortAnalysis:
    contrasts, min_pairs = settings.contrasts, settings.min_pairs
    n_c, n_m = len(contrasts), len(METRICS)
    cohorts = _cohort_aggregates(wide, summary, arms, contrasts)
    k = cohorts.height
    pairs = _ints(cohorts, "pairs")
    has = (
        np.stack([cohorts[f"has:{a}"].fill_null(False).to_numpy() for a in arms], axis=1)
        if arms
        else np.zeros((k, 0), bool)
    )
    ok = pairs >= min_pairs
    applies = np.zeros((k, n_c), dtype=bool)
    for j, c in enumerate(contrasts):
        applies[:, j] = has[:, arms.index(c.treatment)] & has[:, arms.index(c.control)]
    per_effect = [(c.label, m) for c in contrasts for m in METRICS]
    n_eff = _per_column(cohorts, [f"n:{c}:{m}" for c, m in per_effect]).reshape(k, n_c, n_m)
    null_eff = _per_column(cohorts, [f"null:{c}:{m}" for c, m in per_effect])
    null_eff = null_eff.reshape(k, n_c, n_m)
    results = empty_results(k, n_c)
    notes: list[list[str]] = [[] for _ in range(k)]
    engine = "none"
    if n_c:
        jobs = _resample_jobs(wide, cohorts, contrasts, ok, applies)
        engine = run_cohorts(settings, results, jobs, notes, workers)
    return CohortAnalysis(
        run_id=settings.run_id,
        min_pairs=min_pairs,
        n_resamples=settings.n_resamples,
        confidence=settings.confidence,
        method=settings.method,
        plan=plan,
        keys=cohorts.select(list(KEY_COLUMNS)),
        arms=arms,
        contrasts=contrasts,
        ok=ok,
        pairs=pairs,
        excluded=_ints(cohorts, "excluded"),
        join_coverage=_per_column(cohorts, ["exact", "fallback", "missing"]),
        has_arm=has,
        correct=_per_column(cohorts, [f"right:{a}" for a in arms]),
        graded=_per_column(cohorts, [f"graded:{a}" for a in arms]),
        applies=applies,
        cells={
            cell: _per_column(cohorts, [f"{cell}:{c.label}" for c in contrasts]) for cell in "abcd"
        },
        estimate=results["estimate"],
        low=results["low"],
        high=results["high"],
        decision_low=results["decision_low"],
        decision_high=results["decision_high"],
        p_saving=results["p_saving"],
        p_increase=results["p_increase"],
        skewness=results["skewness"],
        t_stat=results["t_stat"],
        n=n_eff,
        excluded_null=null_eff,
        notes=notes,
        engine=engine,
    )
