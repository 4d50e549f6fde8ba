"""One cohort cannot show its shape: decide it as if it had the worst calibrated shape.

The skewness gate (:mod:`pairlab.core.stats.skew_gate`) judges a contrast's metric over
the analysis's cohorts and needs at least two of them. An analysis with **one** cohort per
contrast and metric (a single-task eval) has nothing to judge the shape with, and the
decision interval alone misses the targets on the skewed shapes (docs/statistics.md
section 2: lognormal sigma 1 towards costs, 6-10% false wins at 8-25 pairs). The rule:

    an effect that is its contrast's metric's only tested cohort is tested with the
    decision test's one-sided p-values, each raised to ``p_worst``: the level at which the
    sample's Student statistic ``t = mean / se`` equals Hall's (1992) skew-corrected
    critical value at the worst target skewness ``gamma`` = :data:`WORST_SKEWNESS`
    (lognormal sigma 1), ``q(a) = t_{n-1, 1-a} + gamma (2 t_{n-1, 1-a}^2 + 1) / (6 sqrt n)``
    (the saving side with ``-t``, the increase side with ``t``). Equivalently, its
    interval is the union of the decision interval and ``mean -/+ q(alpha/2) se``.

Both sides are widened (the direction of an unseen tail is unknown), so the rule is
conservative for symmetric data: measured (``tests.stats_calibration ... one-cohort``)
false wins <= 2.5% for every target shape at 8-25 pairs (sigma 1 towards costs:
2.0-2.5%), non-rejection at the true mean 97.5-100% (above the 93-97% band, on the safe
side), at the price of power: at a true saving of 1 sd, normal data are decided 3% of the
time at 8 pairs, 25% at 15, 82% at 25 (the interval alone: 56%, 93%, 100%). An effect the
decision test alone would have decided and this rule does not is ``insufficient`` with
reason ``shape-unknown`` (:mod:`pairlab.core.analysis.decisions`); ``pairlab power`` says
the pairs a one-cohort study needs (:func:`worst_shape_critical`).
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

# Skewness of a lognormal with sigma 1: sqrt(e - 1) (e + 2).
WORST_SKEWNESS: Final = math.sqrt(math.e - 1.0) * (math.e + 2.0)
ONE_COHORT_RULE: Final = (
    "a contrast's metric with one tested cohort (its shape cannot be judged) is tested at "
    "the decision test's p-values read under the worst calibrated shape (Hall's skew-corrected "
    "t at lognormal sigma 1's skewness 6.18); what the test alone would decide and this does "
    "not is insufficient (shape-unknown)"
)


def student_t(data: FloatArray) -> FloatArray:
    """Student's statistic ``mean / (sd / sqrt n)`` of each column of ``data`` ((n, C)):
    +-inf for a column without spread and a non-zero mean, NaN for none and for n < 2."""
    n = data.shape[0]
    if n < 2:
        return np.full(data.shape[1], np.nan)
    mean = data.mean(axis=0)
    sd = data.std(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (sd / math.sqrt(n))
        flat = np.where(mean != 0, np.copysign(np.inf, mean), np.nan)
    return np.asarray(np.where(sd > 0, t, flat))


def worst_shape_critical(n: NDArray[np.int64] | int, level: float) -> FloatArray:
    """Hall's one-sided critical value at ``level`` for ``n`` pairs at the worst target
    skewness (the bound a one-cohort statistic must pass)."""
    from scipy import special  # type: ignore[import-untyped]  # no stubs locked

    df = np.maximum(np.asarray(n, dtype=float) - 1.0, 1.0)
    t = special.stdtrit(df, 1.0 - level)
    a = WORST_SKEWNESS / (6.0 * np.sqrt(df + 1.0))
    return np.asarray(t + a * (2.0 * t * t + 1.0), dtype=float)


def worst_shape_p(t: FloatArray, n: NDArray[np.int64]) -> FloatArray:
    """One-sided p-value of Student's statistic ``t`` (oriented: > 0 is evidence for the
    side tested) of ``n`` pairs under the worst target shape: the level whose Hall
    critical value (:func:`worst_shape_critical`) equals ``t``; 1 where ``t`` is no
    evidence at all, NaN where ``t`` is NaN. ``t`` is the sample's own statistic, not read
    back from a bootstrap p-value (whose floor 1/B would cap it)."""
    from scipy import special

    t = np.asarray(t, dtype=float)
    df = np.maximum(np.asarray(n, dtype=float) - 1.0, 1.0)
    a = WORST_SKEWNESS / (6.0 * np.sqrt(df + 1.0))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # q(c) = c + a (2 c^2 + 1) = t  <=>  2a c^2 + c + a - t = 0 (the root c > 0)
        disc = 1.0 - 8.0 * a * (a - t)
        c = (-1.0 + np.sqrt(np.maximum(disc, 0.0))) / (4.0 * a)
        p = np.where((disc >= 0.0) & (c > 0.0), special.stdtr(df, -c), 1.0)
        p = np.where(np.isposinf(t), 0.0, p)  # no spread, every pair on this side
    return np.asarray(np.where(np.isnan(t), np.nan, p))
