"""Vectorised, deterministic bootstrap intervals for paired mean differences.

One call resamples the *pairs* of one cohort once and reuses that resample for
every metric column of the cohort:

1. :func:`draw_resample_indices` draws a (B, n) matrix of indices from the
   caller's generator (``uint16`` when n allows it: half the random bits of
   ``int64`` for the same uniform draw);
2. ``np.bincount`` turns them into a (B, n) matrix of counts (how often each
   pair appears in each resample);
3. matrix products ``(values - mean).T @ counts.T`` give the (columns, B)
   centered resample sums (mean_b = mean + sum_b / n): no per-resample Python
   loop and no (B, n, columns) gather. Centering keeps float32 sums accurate
   (see :func:`bootstrap_mean_intervals`).
   The product runs in blocks of resamples small enough that OpenBLAS keeps
   each on the calling thread: parallelism comes from cohorts running in
   threads, and OpenBLAS's own threads busy-waiting against them were measured
   5-10x slower on 2 cores;
4. the two percentile positions are found in place with two single-``kth``
   ``ndarray.partition`` calls (SIMD select) instead of a full sort, and
   interpolated (in float64) as ``np.percentile``'s default (linear) method;
   only the four selected sums per column are divided by n.

Sharing one resample across a cohort's metrics is a *joint* bootstrap: within
each resample the metrics come from the same pairs, so, e.g., the ladder
contrasts and the total stay coherent with their parts. Which generator to use
is the caller's decision (see :mod:`pairlab.core.stats.seeds` and
:mod:`pairlab.core.analysis.cohorts`): seeds come from names, never from values.

BCa (``method="bca"``) is offered as an option. It is undefined when all
values of a column are equal (the jackknife has no spread): such a column gets
the degenerate interval [v, v] and is flagged ``degenerate``; the percentile
method returns the same interval for it, also flagged. A non-degenerate column
whose BCa correction is not finite falls back to its percentile interval and is
flagged ``bca_fallback``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special  # type: ignore[import-untyped]  # no stubs locked (scipy-stubs)

from pairlab.core.stats import kernels, order_keys
from pairlab.core.stats.studentized import (
    DecisionIntervals,
    column_stats,
    decision_intervals,
    studentized_sums,
)
from pairlab.core.stats.workspace import WORKSPACE as _WORKSPACE

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]
Method = Literal["percentile", "bca"]
Precision = Literal["float32", "float64"]

DEFAULT_RESAMPLES = 10_000
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class MeanIntervals:
    """Per-column results of one bootstrap call (arrays of the column count).

    ``decision``: the decision interval and its p-values
    (:mod:`pairlab.core.stats.studentized`), when asked for.
    """

    estimate: FloatArray
    low: FloatArray
    high: FloatArray
    degenerate: BoolArray
    bca_fallback: BoolArray
    decision: DecisionIntervals | None = None


# OpenBLAS runs a GEMM single-threaded below M*N*K = 4 * 65536 (its default
# GEMM_MULTITHREAD_THRESHOLD); blocks of resamples stay below it.
_GEMM_BLOCK_MNK = 4 * 65536


# Temporaries are made in blocks of about this many elements: small enough for
# glibc to serve them from its heap rather than fresh mmapped (page-faulting)
# memory, large enough that the per-call overhead is negligible.
_BLOCK_ELEMENTS = 12_000


def draw_resample_indices(
    rng: np.random.Generator, n: int, n_resamples: int
) -> NDArray[np.integer[Any]]:
    """(n_resamples, n) indices drawn uniformly from ``range(n)`` with replacement.

    Drawn in fixed blocks of rows (the block size is part of the stream, so a
    given generator always yields the same matrix).
    """
    dtype = np.uint16 if n <= np.iinfo(np.uint16).max else np.int64
    out = np.empty((n_resamples, n), dtype=dtype)
    rows = max(1, _BLOCK_ELEMENTS // n)
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        out[start:stop] = rng.integers(0, n, (stop - start, n), dtype=dtype)
    return out


def draw_resample_counts(
    rng: np.random.Generator,
    n: int,
    n_resamples: int,
    dtype: Precision = "float32",
    compiled: bool = False,
) -> NDArray[np.floating[Any]]:
    """(n_resamples, n) matrix: how often each of ``n`` items is drawn in each resample.

    The result is a per-thread scratch array: it stays valid until the same
    thread calls again. ``compiled``: counted by :mod:`pairlab.core.stats.kernels`
    (the same counts).
    """
    rows = max(1, _BLOCK_ELEMENTS // n)
    if compiled and n <= np.iinfo(np.uint16).max and isinstance(rng.bit_generator, np.random.PCG64):
        # the same draws, counted as they are drawn (no index matrix)
        out = _WORKSPACE.get("counts", (n_resamples, n), dtype)
        kernels.draw_counts(rng, n, n_resamples, rows, out)
        return out
    idx = draw_resample_indices(rng, n, n_resamples)
    if compiled:
        out = _WORKSPACE.get("counts", (n_resamples, n), dtype)
        kernels.counts_from_indices(idx, out)
        return out
    offsets = (np.arange(rows, dtype=np.int64) * n)[:, None]
    flat = _WORKSPACE.get("flat", (rows, n), np.int64)
    counts = _WORKSPACE.get("counts", (n_resamples, n), dtype)
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        block = flat[: stop - start]
        np.add(idx[start:stop], offsets[: stop - start], out=block, casting="unsafe")
        tally = np.bincount(block.ravel(), minlength=block.size)
        np.copyto(counts[start:stop], tally.reshape(stop - start, n), casting="unsafe")
    return counts


def resampled_sums(
    values: NDArray[np.floating[Any]], counts: NDArray[np.floating[Any]]
) -> NDArray[np.floating[Any]]:
    """(columns, B) resample sums ``values.T @ counts.T``, in single-threaded GEMM blocks.

    The result is a per-thread scratch array (see :func:`draw_resample_counts`).
    """
    n, columns = values.shape
    n_resamples = counts.shape[0]
    out = _WORKSPACE.get("sums", (columns, n_resamples), np.result_type(values, counts))
    step = max(1, _GEMM_BLOCK_MNK // max(1, n * columns))
    left = np.ascontiguousarray(values.T)
    for start in range(0, n_resamples, step):
        stop = min(start + step, n_resamples)
        np.matmul(left, counts[start:stop].T, out=out[:, start:stop])
    return out


def _lerp(
    a: NDArray[np.floating[Any]], b: NDArray[np.floating[Any]], t: FloatArray | float
) -> FloatArray:
    # np.percentile's linear interpolation, written the same way, in float64.
    a, b = a.astype(np.float64), b.astype(np.float64)
    diff = b - a
    out = a + diff * t
    return np.where(np.asarray(t) >= 0.5, b - diff * (1 - np.asarray(t)), out)


def _percentile_pair(
    reps: NDArray[np.floating[Any]], q_low: float, q_high: float
) -> tuple[FloatArray, FloatArray]:
    """Linear-interpolated quantiles ``q_low`` < ``q_high`` of each row (reorders ``reps``)."""
    n_rep = reps.shape[1]
    h_low, h_high = (n_rep - 1) * q_low, (n_rep - 1) * q_high
    f_low, f_high = math.floor(h_low), math.floor(h_high)
    k1 = f_low + 1
    if n_rep < 4 or k1 + 1 >= f_high:
        got = np.quantile(reps.astype(np.float64), [q_low, q_high], axis=1)
        return got[0], got[1]
    reps.partition(k1, axis=1)
    low = _lerp(reps[:, :k1].max(axis=1), reps[:, k1], h_low - f_low)
    tail = reps[:, k1 + 1 :]
    k2 = f_high - k1 - 1  # order statistic f_high of the row is k2 of the tail
    tail.partition(k2, axis=1)
    upper_next = tail[:, k2 + 1 :].min(axis=1) if k2 + 1 < tail.shape[1] else tail[:, k2]
    high = _lerp(tail[:, k2], upper_next, h_high - f_high)
    return low, high


def _per_row_quantile(sorted_reps: NDArray[np.floating[Any]], q: FloatArray) -> FloatArray:
    n_rep = sorted_reps.shape[1]
    h = (n_rep - 1) * q
    f = np.clip(np.floor(h).astype(np.int64), 0, n_rep - 1)
    c = np.minimum(f + 1, n_rep - 1)
    rows = np.arange(sorted_reps.shape[0])
    return _lerp(sorted_reps[rows, f], sorted_reps[rows, c], h - f)


def _bca_bounds(
    values: FloatArray, sums: NDArray[np.floating[Any]], confidence: float
) -> tuple[FloatArray, FloatArray, BoolArray]:
    """BCa limits of the centered resample sums per column (Efron & Tibshirani 14.3,
    as SciPy): NaN where undefined. A resample mean is below the estimate exactly
    when its centered sum is below zero."""
    n, n_rep = values.shape[0], sums.shape[1]
    below = np.count_nonzero(sums < 0, axis=1)
    at_or_below = np.count_nonzero(sums <= 0, axis=1)
    z0 = special.ndtri((below + at_or_below) / (2.0 * n_rep))
    # Jackknife of the mean is closed-form: leave-one-out means (S - x_i) / (n - 1).
    jack = (values.sum(axis=0)[None, :] - values) / (n - 1)
    u = (n - 1) * (jack.mean(axis=0)[None, :] - jack)
    with np.errstate(invalid="ignore", divide="ignore"):
        accel = (np.sum(u**3, axis=0) / n**3) / (6.0 * (np.sum(u**2, axis=0) / n**2) ** 1.5)
        alpha = (1.0 - confidence) / 2.0
        z_alpha = float(special.ndtri(alpha))
        num1, num2 = z0 + z_alpha, z0 - z_alpha
        alpha_1 = special.ndtr(z0 + num1 / (1 - accel * num1))
        alpha_2 = special.ndtr(z0 + num2 / (1 - accel * num2))
    ok = np.isfinite(alpha_1) & np.isfinite(alpha_2)
    sorted_reps = np.sort(sums, axis=1)
    low = _per_row_quantile(sorted_reps, np.where(ok, alpha_1, 0.5))
    high = _per_row_quantile(sorted_reps, np.where(ok, alpha_2, 0.5))
    return np.where(ok, low, np.nan), np.where(ok, high, np.nan), ok


def bootstrap_mean_intervals(
    values: ArrayLike,
    rng: np.random.Generator,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    method: Method = "percentile",
    precision: Precision = "float32",
    decision_confidence: float | None = None,
    compiled: bool = False,
) -> MeanIntervals:
    """Bootstrap intervals of the mean of each column of ``values`` (n rows, finite).

    With ``decision_confidence``, also the decision interval at that confidence
    and its p-values, from the same resamples
    (:func:`pairlab.core.stats.studentized.studentized_sums`).

    All columns share one resample of the rows (a joint bootstrap); ``n`` must
    be at least 2. A resample mean is computed as ``mean + sum(count * (x -
    mean)) / n``: estimate, centering and interpolation are float64; the
    resampled centered sums use ``precision``. In float32 their rounding
    (about 1e-7 of the data's spread) is some five orders of magnitude below
    the Monte-Carlo error of a 10,000-resample endpoint, and it halves the
    memory traffic of the two dominant steps (product and selection).
    ``"float64"`` is the reference path. ``compiled``: two steps run as compiled
    loops (:mod:`pairlab.core.stats.kernels`); the results are the same bit for bit.
    """
    data = np.asarray(values, dtype=np.float64)
    if data.ndim == 1:
        data = data[:, None]
    n = data.shape[0]
    if n < 2:
        raise ValueError("a bootstrap interval needs at least 2 values")
    if not np.all(np.isfinite(data)):
        raise ValueError("bootstrap values must be finite (leave nulls out before resampling)")
    if n_resamples < 2:
        raise ValueError("n_resamples must be at least 2")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if method not in ("percentile", "bca"):
        raise ValueError(f"unknown bootstrap method {method!r}")
    if decision_confidence is not None and not 0.0 < decision_confidence < 1.0:
        raise ValueError(f"decision_confidence must be in (0, 1), got {decision_confidence}")
    described = column_stats(data)
    estimate, degenerate = described.estimate, described.degenerate
    columns = data.shape[1]
    centered = (data - estimate).astype(precision)
    decision = None
    if decision_confidence is not None:
        counts = draw_resample_counts(rng, n, n_resamples, precision, compiled)
        found = studentized_sums(centered, counts, described.t_obs, compiled)
        sums = found.s1
        decision = decision_intervals(data, found, decision_confidence, described)
        if method == "percentile" and sums.dtype == np.float32:
            # Tail order statistics selected as integers (order_keys): same values, faster.
            alpha = (1.0 - confidence) / 2.0
            low, high = order_keys.percentile_pair(sums, alpha, 1.0 - alpha)
            low = np.where(degenerate, estimate, estimate + low / n)
            high = np.where(degenerate, estimate, estimate + high / n)
            no_fallback = np.zeros(columns, dtype=np.bool_)
            return MeanIntervals(estimate, low, high, degenerate, no_fallback, decision)
    elif columns == 1:
        # One column: gathering the resampled values is cheaper than counts + GEMM
        # (same draws, so the same resamples; sums differ only in rounding order).
        idx = draw_resample_indices(rng, n, n_resamples)
        sums = centered[:, 0][idx].sum(axis=1)[None, :]
    else:
        sums = resampled_sums(centered, draw_resample_counts(rng, n, n_resamples, precision))
    alpha = (1.0 - confidence) / 2.0
    fallback = np.zeros(data.shape[1], dtype=np.bool_)
    if method == "bca":
        b_low, b_high, ok = _bca_bounds(data, sums, confidence)
        low, high = _percentile_pair(sums, alpha, 1.0 - alpha)
        fallback = ~ok & ~degenerate
        low, high = np.where(ok, b_low, low), np.where(ok, b_high, high)
    else:
        low, high = _percentile_pair(sums, alpha, 1.0 - alpha)
    low = np.where(degenerate, estimate, estimate + low / n)
    high = np.where(degenerate, estimate, estimate + high / n)
    return MeanIntervals(estimate, low, high, degenerate, fallback, decision)
