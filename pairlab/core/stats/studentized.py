"""The decision interval: Student's t and the studentized bootstrap, joined.

The seed's percentile bootstrap is the *reported* 95% interval; it is too narrow
at a few pairs (it covers a normal mean 88% of the time at 8 pairs and, being
bounded by the sample's range, declares a saving whenever every pair saved: 1
in 32 under a symmetric null at 5 pairs). The *decision* (win, regression) uses
the interval chosen by the calibration study (docs/statistics.md):

    the hull (union) of Student's t interval and the studentized bootstrap
    (bootstrap-t) interval of the mean, at confidence 1 - alpha.

Student's t is exact for normal differences and conservative for symmetric
heavy tails; the bootstrap-t moves its limits where the sample is skewed
(Efron & Tibshirani 1993, ch. 12; Hall 1988). The hull is never narrower than
either: a decision needs both to agree.

Computed from the same resample counts as the percentile interval: with
``c_i = x_i - mean``, ``S1_b = sum_i k_bi c_i`` and ``S2_b = sum_i k_bi c_i^2``
(matrix products), a resample's mean is ``mean + S1_b / n`` and its standard
error ``sqrt((S2_b / n - (S1_b / n)^2) / (n - 1))``, so ``t*_b = (S1_b / n) /
se*_b`` with no per-resample loop. A resample with no spread has ``t* =
+-inf`` (``0`` when it also sits on the mean). :func:`studentized_sums` runs
the products, ``t*`` and its counts block by block of resamples, so that the
elementwise work happens while the block is in cache (it was two thirds of the
decision's cost on whole arrays).

p-values are the exact inverse of the intervals, so that a decision made from
a p-value and one read off the interval always agree. The bootstrap-t limits
are order statistics of ``t*`` (the ``k``-th smallest and largest, ``k =
floor(B alpha / 2)``), and its one-sided p of "mean < 0" is ``(#{t* <= t} + 1) /
B`` for the observed ``t = mean / se`` (the usual Monte-Carlo p-value): the
bootstrap-t high end is below zero exactly when that p is at most alpha / 2.
The hull's p is the larger of Student's and the bootstrap's, so the hull
excludes zero exactly when the two-sided ``2 min(p_saving, p_increase)`` is
at most alpha.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special  # type: ignore[import-untyped]  # no stubs locked

from pairlab.core.stats import blas, kernels, order_keys
from pairlab.core.stats.workspace import WORKSPACE

FloatArray = NDArray[np.float64]

# A resample without spread has t* = +-inf, computed as S1 / sqrt(smallest normal):
# +-1e19 x S1 or more. A studentized quantile beyond 1e9 is such a resample: the
# interval end is reported unbounded (a real resample 1e9 standard errors from the
# mean does not happen).
_UNBOUNDED = 1e9

DECISION_METHOD = "studentized-hybrid"
DECISION_DESCRIPTION = (
    "hull of Student's t interval and the studentized (bootstrap-t) interval of the mean "
    "paired difference, from the same resamples as the reported percentile interval"
)


@dataclass(frozen=True)
class DecisionIntervals:
    """Per column: the decision interval and the one-sided p-values that invert it."""

    low: FloatArray
    high: FloatArray
    p_saving: FloatArray  # H1: mean < 0 (treatment uses less)
    p_increase: FloatArray  # H1: mean > 0

    @property
    def p_two_sided(self) -> FloatArray:
        return np.asarray(np.minimum(1.0, 2.0 * np.minimum(self.p_saving, self.p_increase)))


# OpenBLAS runs a GEMM single-threaded below M*N*K = 4 * 65536 (its default
# GEMM_MULTITHREAD_THRESHOLD); see pairlab.core.stats.bootstrap.
_GEMM_BLOCK_MNK = 4 * 65536
# The elementwise work on a block of resamples stays in the core's cache below this
# many elements (C columns x block resamples, float32: ~128 KiB).
_CACHE_ELEMENTS = 65536


@dataclass(frozen=True)
class StudentizedSums:
    """The resample sums and ``t*`` of every column, with ``t*`` counted against ``t``."""

    s1: NDArray[np.floating[Any]]  # (C, B) centered resample sums (the percentile bootstrap's)
    tstar: NDArray[np.floating[Any]]  # (C, B)
    at_most: NDArray[np.int64]  # #{t* <= t}
    at_least: NDArray[np.int64]  # #{t* >= t}


def _studentize_block(
    s1: NDArray[np.floating[Any]],
    ns2: NDArray[np.floating[Any]],
    out: NDArray[np.floating[Any]],
    scratch: NDArray[np.floating[Any]],
) -> None:
    """``out = S1 / sqrt(nS2 - S1^2)`` (``t* / sqrt(n - 1)``) from ``S1`` and ``nS2``. A
    resample without spread (the variance 0, or below 0 by rounding) is floored at the
    smallest normal number: its ``t*`` is huge (read back as unbounded) or 0 when it also
    sits on the mean; no NaN."""
    np.multiply(s1, s1, out=scratch)
    np.subtract(ns2, scratch, out=scratch)  # n^2 x the plug-in variance of the resample
    np.maximum(scratch, np.finfo(scratch.dtype).tiny, out=scratch)
    np.sqrt(scratch, out=scratch)
    with np.errstate(over="ignore"):
        np.divide(s1, scratch, out=out)


def studentized_sums(
    centered: NDArray[np.floating[Any]],
    counts: NDArray[np.floating[Any]],
    t_obs: FloatArray,
    compiled: bool = False,
    out: tuple[NDArray[np.floating[Any]], NDArray[np.floating[Any]]] | None = None,
) -> StudentizedSums:
    """Resample sums and ``t*`` of ``centered`` ((n, C) values minus their means) under
    ``counts`` ((B, n)), block by block so that ``t*`` and its counts are computed while
    the block is in cache. The returned arrays are per-thread scratch arrays; ``tstar``
    is ``t* / sqrt(n - 1)`` (the order is what matters; :func:`decision_intervals`
    scales its quantiles back). ``compiled`` (float32 only): the elementwise work of each
    block as one compiled loop (:mod:`pairlab.core.stats.kernels`), the same numbers.
    ``out``: (s1, tstar) arrays to fill instead of the scratch arrays."""
    n, columns = centered.shape
    n_rep = counts.shape[0]
    dtype = np.result_type(centered, counts)
    # [c | n c^2]: one product gives S1 and n S2, into a contiguous block that stays in
    # cache for the elementwise work (measured ~40% cheaper than on strided views).
    left = np.ascontiguousarray(np.concatenate([centered, n * centered * centered], axis=1).T)
    if out is None:
        s1 = WORKSPACE.get("s1", (columns, n_rep), dtype)
        tstar = WORKSPACE.get("tstar", (columns, n_rep), dtype)
    else:  # the caller's (C, B) arrays (rows of a batch)
        s1, tstar = out
    if blas.one_thread():  # a whole cache block per product (pairlab.core.stats.blas)
        gemm = block = max(1, _CACHE_ELEMENTS // max(1, columns))
    else:  # products small enough for OpenBLAS to run them on one thread
        gemm = max(1, _GEMM_BLOCK_MNK // max(1, 2 * n * columns))
        block = gemm * max(1, _CACHE_ELEMENTS // max(1, columns * gemm))
    compiled = compiled and dtype == np.float32
    both_full = WORKSPACE.get("both", (2 * columns, block), dtype)
    if not compiled:
        t_full = WORKSPACE.get("tblock", (columns, block), dtype)
        scratch_full = WORKSPACE.get("scratch", (columns, block), dtype)
        flags_full = WORKSPACE.get("flags", (columns, block), np.bool_)
    target = (t_obs / math.sqrt(n - 1.0)).astype(dtype)[:, None]
    below = np.zeros(columns, dtype=np.int64)
    for start in range(0, n_rep, block):
        stop = min(start + block, n_rep)
        width = stop - start
        if width == block:
            both = both_full
            if not compiled:
                tb, scratch, flags = t_full, scratch_full, flags_full
        elif compiled:  # the last, shorter block: a per-thread array of its width (a
            # fresh one was ~10-40 us a call in page faults)
            both = WORKSPACE.get("both_last", (2 * columns, width), dtype)
        else:  # the last, shorter block: fresh contiguous arrays
            both = np.empty((2 * columns, width), dtype)
            tb, scratch = np.empty((columns, width), dtype), np.empty((columns, width), dtype)
            flags = np.empty((columns, width), np.bool_)
        for g in range(0, width, gemm):
            h = min(g + gemm, width)
            np.matmul(left, counts[start + g : start + h].T, out=both[:, g:h])
        if compiled:
            kernels.studentize_block(both, width, target[:, 0], s1, tstar, start, below)
            continue
        b1 = both[:columns]
        _studentize_block(b1, both[columns:], tb, scratch)
        np.less(tb, target, out=flags)
        below += np.add.reduce(flags, axis=1, dtype=np.int64)
        s1[:, start:stop] = b1
        tstar[:, start:stop] = tb
    # Ties with the observed t (a resample with exactly its studentized deviation) are
    # counted on the "above" side; with continuous data there are none.
    at_most, at_least = below, n_rep - below
    return StudentizedSums(s1, tstar, at_most, at_least)


def _unbounded(q: FloatArray) -> FloatArray:
    return np.asarray(np.where(q >= _UNBOUNDED, np.inf, np.where(q <= -_UNBOUNDED, -np.inf, q)))


def _order_pair(
    reps: NDArray[np.floating[Any]], k_low: int, k_high: int
) -> tuple[FloatArray, FloatArray]:
    """Order statistics ``k_low`` < ``k_high`` (0-based) of each row; reorders ``reps``."""
    reps.partition(k_low, axis=1)
    low = reps[:, k_low].astype(np.float64)
    tail = reps[:, k_low + 1 :]
    tail.partition(k_high - k_low - 1, axis=1)
    return low, tail[:, k_high - k_low - 1].astype(np.float64)


def decision_intervals(
    data: FloatArray,
    sums: StudentizedSums,
    confidence: float,
    columns: ColumnStats | None = None,
) -> DecisionIntervals:
    """The decision interval of each column of ``data`` (n rows) from its studentized
    resample sums (reorders ``sums.tstar``); ``columns``: :func:`column_stats` of ``data``."""
    return finish_decision_intervals(
        sums.tstar,
        data.shape[0],
        sums.at_most,
        sums.at_least,
        columns or column_stats(data),
        confidence,
    )


def finish_decision_intervals(
    tstar: NDArray[np.floating[Any]],
    n: int | NDArray[np.int64],
    at_most: NDArray[np.int64],
    at_least: NDArray[np.int64],
    columns: ColumnStats,
    confidence: float,
    t_crit: FloatArray | None = None,
) -> DecisionIntervals:
    """How a win is decided, once: Student's t interval joined with the bootstrap-t one
    (the wider of the two at each end), the one-sided p-values the larger of Student's
    and the bootstrap's, and a column with no spread decided by its sign alone.

    ``tstar``: [column, resample] studentized resample sums (reordered here); ``n``:
    the pairs, one count for every column (:func:`decision_intervals`) or one per
    column (the batch, :mod:`pairlab.core.stats.batch`); ``at_most``/``at_least``:
    per column, how many resamples' t lie at most / at least at the observed t;
    ``t_crit``: Student's two-sided critical value at each ``n`` (:func:`t_critical`),
    when the caller has it.
    """
    n_rep = tstar.shape[1]
    estimate, se, degenerate, t_obs = (
        columns.estimate,
        columns.se,
        columns.degenerate,
        columns.t_obs,
    )
    alpha = 1.0 - confidence
    # Order statistics k and B-1-k, k = floor(B alpha/2) - 1: the bootstrap-t high end is
    # below 0 exactly when #(t* <= t) <= k, i.e. p_boot_saving = (#(t* <= t) + 1) / B <= alpha/2.
    k = math.floor(n_rep * alpha / 2.0 + 1e-9) - 1
    if k < 0:  # too few resamples for this alpha: the bootstrap-t cannot exclude anything
        q_low, q_high = np.full(len(estimate), -np.inf), np.full(len(estimate), np.inf)
    else:
        scale = np.sqrt(n - 1.0)
        # float32: tail order statistics selected as integers (order_keys), same values.
        select = order_keys.order_pair if tstar.dtype == np.float32 else _order_pair
        q_low, q_high = (_unbounded(q * scale) for q in select(tstar, k, n_rep - 1 - k))
    p_boot_saving = np.minimum(1.0, (at_most + 1.0) / n_rep)
    p_boot_increase = np.minimum(1.0, (at_least + 1.0) / n_rep)
    if t_crit is None:
        t_crit = special.stdtrit(n - 1, 1.0 - alpha / 2.0)
    with np.errstate(invalid="ignore", over="ignore"):
        boot_low = estimate - q_high * se
        boot_high = estimate - q_low * se
    low = np.minimum(estimate - t_crit * se, boot_low)
    high = np.maximum(estimate + t_crit * se, boot_high)
    p_student = special.stdtr(n - 1, t_obs)
    p_saving = np.maximum(p_student, p_boot_saving)
    p_increase = np.maximum(1.0 - p_student, p_boot_increase)
    # All differences equal: no spread, the sign is the evidence (0 = none).
    p_saving = np.where(degenerate, np.where(estimate < 0, 0.0, 1.0), p_saving)
    p_increase = np.where(degenerate, np.where(estimate > 0, 0.0, 1.0), p_increase)
    low = np.where(degenerate, estimate, low)
    high = np.where(degenerate, estimate, high)
    return DecisionIntervals(low, high, p_saving, p_increase)


@functools.lru_cache(maxsize=1024)
def t_critical(n: int, confidence: float) -> float:
    """Student's two-sided critical value of ``n`` pairs at ``confidence``: the number
    :func:`finish_decision_intervals` computes for a column of ``n`` pairs (the same
    ufunc on the same doubles), once per (n, confidence)."""
    alpha = 1.0 - confidence
    return float(special.stdtrit(n - 1, 1.0 - alpha / 2.0))


@dataclass(frozen=True)
class ColumnStats:
    """Per column: the mean, its standard error, no spread at all, and ``t = mean / se``."""

    estimate: FloatArray
    se: FloatArray
    degenerate: NDArray[np.bool_]
    t_obs: FloatArray


def column_stats(data: FloatArray) -> ColumnStats:
    n = data.shape[0]
    estimate = data.mean(axis=0)
    se = data.std(axis=0, ddof=1) / math.sqrt(n)
    degenerate = np.all(data == data[:1], axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_obs = np.where(degenerate, 0.0, estimate / np.where(degenerate, 1.0, se))
    return ColumnStats(estimate, se, degenerate, np.asarray(t_obs))
