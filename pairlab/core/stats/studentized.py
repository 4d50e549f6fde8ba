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
(one matrix product for both), a resample's mean is ``mean + S1_b / n`` and its
standard error ``sqrt((S2_b / n - (S1_b / n)^2) / (n - 1))``, so
``t*_b = (S1_b / n) / se*_b`` with no per-resample loop. A resample with no
spread has ``t* = +-inf`` (``0`` when it also sits on the mean).

p-values are the exact inverse of the intervals, so that a decision made from
a p-value and one read off the interval always agree: for the bootstrap-t the
one-sided p of "mean < 0" is the level at which the linearly interpolated
quantile of ``t*`` (``np.quantile``'s default) equals the observed
``t = mean / se``; the hull's p is the larger of Student's and the bootstrap's.
The hull's high end is below zero exactly when ``p_saving < alpha / 2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special  # type: ignore[import-untyped]  # no stubs locked

FloatArray = NDArray[np.float64]

# float32 max is 3.4e38: a resample with no spread gets t* = +-8.5e37 (never overflows
# when interpolated); an interpolated quantile beyond 1e30 had weight on one of them.
_INF_STANDIN = 8.5e37
_UNBOUNDED = 1e30

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


def studentized_resamples(
    s1: NDArray[np.floating[Any]], s2: NDArray[np.floating[Any]], n: int
) -> NDArray[np.floating[Any]]:
    """``t*`` per (column, resample) from the centered resample sums (same dtype as ``s1``)."""
    mean_shift = s1 / n
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        var = s2 / n - mean_shift * mean_shift
        np.maximum(var, 0, out=var)
        var /= n - 1
        np.sqrt(var, out=var)
        out = np.divide(mean_shift, var, out=var)
    out[np.isnan(out)] = 0  # no spread and on the mean: no deviation
    # +-inf become a finite stand-in so that interpolating between two of them stays
    # defined; quantiles beyond _UNBOUNDED are read back as infinite.
    np.clip(out, -_INF_STANDIN, _INF_STANDIN, out=out)
    return out


def _unbounded(q: FloatArray) -> FloatArray:
    return np.asarray(np.where(q >= _UNBOUNDED, np.inf, np.where(q <= -_UNBOUNDED, -np.inf, q)))


def _inverse_quantile(reps: NDArray[np.floating[Any]], t_obs: FloatArray) -> FloatArray:
    """Level at which each row's linearly interpolated quantile equals ``t_obs``."""
    n_rep = reps.shape[1]
    target = t_obs.astype(reps.dtype)[:, None]
    below = reps <= target
    count = below.sum(axis=1)
    lower = np.where(below, reps, -np.inf).max(axis=1).astype(np.float64)
    upper = np.where(below, np.inf, reps).min(axis=1).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(
            np.isfinite(upper - lower) & (upper > lower),
            (t_obs - lower) / (upper - lower),
            0.0,
        )
    level = (count - 1 + np.clip(frac, 0.0, 1.0)) / (n_rep - 1)
    level = np.where(count == 0, 0.0, level)
    return np.asarray(np.where(count == n_rep, 1.0, np.clip(level, 0.0, 1.0)))


def decision_intervals(
    data: FloatArray,
    s1: NDArray[np.floating[Any]],
    s2: NDArray[np.floating[Any]],
    confidence: float,
    quantile_pair: Any,
) -> DecisionIntervals:
    """The decision interval of each column of ``data`` (n rows) from its resample sums.

    ``quantile_pair(reps, q_low, q_high)`` selects two interpolated quantiles per
    row (the bootstrap module's in-place selection); ``s1``/``s2`` are left intact.
    """
    n = data.shape[0]
    estimate = data.mean(axis=0)
    sd = data.std(axis=0, ddof=1)
    se = sd / np.sqrt(n)
    degenerate = np.all(data == data[:1], axis=0)
    alpha = 1.0 - confidence
    tstar = studentized_resamples(s1, s2, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_obs = np.where(degenerate, 0.0, estimate / np.where(degenerate, 1.0, se))
    p_boot = _inverse_quantile(tstar, t_obs)
    q_low, q_high = (_unbounded(q) for q in quantile_pair(tstar, alpha / 2.0, 1.0 - alpha / 2.0))
    t_crit = float(special.stdtrit(n - 1, 1.0 - alpha / 2.0))
    with np.errstate(invalid="ignore", over="ignore"):
        boot_low = estimate - q_high * se
        boot_high = estimate - q_low * se
    low = np.minimum(estimate - t_crit * se, boot_low)
    high = np.maximum(estimate + t_crit * se, boot_high)
    p_student = special.stdtr(n - 1, t_obs)
    p_saving = np.maximum(p_student, p_boot)
    p_increase = np.maximum(1.0 - p_student, 1.0 - p_boot)
    # All differences equal: no spread, the sign is the evidence (0 = none).
    p_saving = np.where(degenerate, np.where(estimate < 0, 0.0, 1.0), p_saving)
    p_increase = np.where(degenerate, np.where(estimate > 0, 0.0, 1.0), p_increase)
    low = np.where(degenerate, estimate, low)
    high = np.where(degenerate, estimate, high)
    return DecisionIntervals(low, high, p_saving, p_increase)
