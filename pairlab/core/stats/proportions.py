"""Intervals and tests for proportions: Wilson per arm, exact McNemar and
Newcombe's paired-difference interval for correctness.

All functions take NumPy arrays (or scalars) and work elementwise, so one call
covers every cohort of a run; correctness is never computed in a per-cohort
Python loop.

* Wilson score interval (Wilson 1927), clipped to [0, 1].
* Exact McNemar test: two-sided binomial test of the discordant pairs against
  p = 1/2 (``p = min(1, 2 * P[X <= min(b, c)])``, X ~ Bin(b + c, 1/2));
  no discordant pairs gives p = 1.
* Newcombe (1998), "Improved confidence intervals for the difference between
  binomial proportions based on paired data", Statistics in Medicine 17,
  2635-2650, method 10: Wilson limits of each marginal proportion combined
  ("square and add") with the phi correlation of the 2x2 table, whose positive
  part is shrunk by n/2 as in the paper (phi = 0 when a margin is empty).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special  # type: ignore[import-untyped]  # no stubs locked

FloatArray = NDArray[np.float64]


def z_value(confidence: float) -> float:
    """Two-sided standard-normal quantile for ``confidence`` (0.95 -> 1.95996...)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return float(special.ndtri(1.0 - (1.0 - confidence) / 2.0))


def wilson_interval(
    successes: ArrayLike, n: ArrayLike, confidence: float = 0.95
) -> tuple[FloatArray, FloatArray]:
    """Wilson score interval; NaN where ``n`` is 0 (no observation, no interval)."""
    k = np.asarray(successes, dtype=np.float64)
    total = np.asarray(n, dtype=np.float64)
    z = z_value(confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / total
        denom = 1.0 + z * z / total
        centre = (p + z * z / (2.0 * total)) / denom
        half = z * np.sqrt(p * (1.0 - p) / total + z * z / (4.0 * total * total)) / denom
    low = np.clip(centre - half, 0.0, 1.0)
    high = np.clip(centre + half, 0.0, 1.0)
    # Exact bounds where the formula is exact but rounding is not.
    low = np.where(k == 0, 0.0, low)
    high = np.where(k == total, 1.0, high)
    empty = total == 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def mcnemar_exact_p(b: ArrayLike, c: ArrayLike) -> FloatArray:
    """Two-sided exact McNemar p-value from the discordant counts ``b`` and ``c``."""
    b_arr = np.asarray(b, dtype=np.int64)
    c_arr = np.asarray(c, dtype=np.int64)
    discordant = b_arr + c_arr
    # Binomial CDF P[X <= k], X ~ Bin(n, 1/2), as scipy.special.bdtr (scipy.stats would
    # cost every cohort worker process a second of imports).
    with np.errstate(invalid="ignore"):
        tail: Any = special.bdtr(np.minimum(b_arr, c_arr), np.maximum(discordant, 1), 0.5)
    p = np.minimum(1.0, 2.0 * np.asarray(tail, dtype=np.float64))
    return np.where(discordant == 0, 1.0, p)


def newcombe_paired_interval(
    a: ArrayLike, b: ArrayLike, c: ArrayLike, d: ArrayLike, confidence: float = 0.95
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Difference p1 - p2 of paired proportions and its Newcombe (method 10) interval.

    The 2x2 table of pairs: ``a`` both correct, ``b`` only arm 1 correct, ``c``
    only arm 2 correct, ``d`` neither. p1 = (a + b) / n, p2 = (a + c) / n.
    NaN where there are no pairs.
    """
    a_f, b_f, c_f, d_f = (np.asarray(x, dtype=np.float64) for x in (a, b, c, d))
    n = a_f + b_f + c_f + d_f
    with np.errstate(invalid="ignore", divide="ignore"):
        p1 = (a_f + b_f) / n
        p2 = (a_f + c_f) / n
        l1, u1 = wilson_interval(a_f + b_f, n, confidence)
        l2, u2 = wilson_interval(a_f + c_f, n, confidence)
        margins = (a_f + b_f) * (c_f + d_f) * (a_f + c_f) * (b_f + d_f)
        cross = a_f * d_f - b_f * c_f
        # Newcombe's phi: a positive association is shrunk by n/2 (and floored
        # at 0); a negative one is used as is; an empty margin gives 0.
        corrected = np.where(cross > n / 2, cross - n / 2, np.where(cross >= 0, 0.0, cross))
        phi = np.where(margins > 0, corrected / np.sqrt(margins), 0.0)
        diff = p1 - p2
        delta = np.sqrt(
            np.maximum((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0)
        )
        epsilon = np.sqrt(
            np.maximum((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0)
        )
    low = np.clip(diff - delta, -1.0, 1.0)
    high = np.clip(diff + epsilon, -1.0, 1.0)
    return diff, low, high
