"""The skewness gate: an analysis decides only shapes its decision interval is calibrated for.

The decision interval (:mod:`pairlab.core.stats.studentized`) meets its targets
(coverage 93-97%, one-sided false-win <= 2.5%) from 8 pairs on for normal, heavy-tailed
(t3) and mildly skewed differences, but not for the skewed costs real agent runs show:
when most pairs save a little and a few cost a lot, a sample that happens to miss the
costly tail looks like a clean, tight saving (docs/statistics.md section 2: 4-5% false
wins for lognormal sigma 0.5, 7-11% for sigma 1, at 8-25 pairs). *One* cohort cannot
show that its shape is the dangerous one: the samples that decide wrongly are exactly
those whose own skewness looks low. The shape is therefore judged over the analysis,
per contrast and metric, from every tested cohort's sample skewness, and:

    a contrast's metric is **skewed** when the mean over its K >= 2 tested cohorts of
    ``G1_c - tau(n_c)`` exceeds ``t_{K-1, 1-level} * sd / sqrt(K)`` (a one-sided t
    test at ``level`` = :data:`SKEW_TEST_LEVEL`; ``sd`` the spread of those
    differences), or the mirror (``-G1_c - tau(n_c)``, skewed towards savings).

``G1`` is the adjusted Fisher-Pearson sample skewness; ``tau(n)`` the mean ``G1`` of
``n`` pairs from the most skewed shape the interval is calibrated for at ``n`` pairs: a
lognormal with sigma :data:`CALIBRATED_SIGMA` (skewness 0.61: targets met from 8 pairs
on) below 100 pairs, and the sigmas of :data:`PAIRS_FOR_SIGMA` from their pairs on;
mean ``G1`` tabulated in :data:`MEAN_G1` by simulation
(``tests.stats_calibration.mean_g1_table``). A skewed
contrast's tested effects are ``insufficient`` (reason ``skewed``) instead of decided,
with the **pairs needed**: the shape's lognormal-equivalent sigma (the sigma whose
tabulated mean ``G1`` at the cohorts' pair counts matches theirs) rounded *up* to the
next calibrated sigma of :data:`PAIRS_FOR_SIGMA`, whose pairs are where the calibration
study measured the targets met; ``None`` beyond the last (more than
:data:`MAX_CALIBRATED_PAIRS`). ``pairlab power`` applies the same function to a pilot.

The level 0.2 (not 0.05) errs towards asking for pairs: at 5 cohorts of 8 lognormal
(sigma 0.5) pairs a 5% test refuses only 27% of analyses and leaves 4.1% false wins;
at 0.2 it refuses 64% and leaves 2.6%, for 7% of normal analyses refused. With one
cohort nothing can be judged (K < 2): that analysis decides as before, and the table
in docs/statistics.md says what that costs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

SKEW_TEST_LEVEL: Final = 0.2
SKEW_GATE_RULE: Final = (
    "per contrast and metric over the analysis's tested cohorts (at least 2): insufficient "
    "(skewed) when their mean sample skewness G1 exceeds, by a one-sided t test at level 0.2, "
    "what the most skewed shape the decision interval is calibrated for at their pairs gives"
)
CALIBRATED_SIGMA: Final = 0.2
MIN_COHORTS: Final = 2

# Mean adjusted sample skewness G1 of n pairs (rows: MEAN_G1_PAIRS) drawn from a
# lognormal of log-sd sigma (columns: MEAN_G1_SIGMAS; 0 = normal, exactly 0 by
# symmetry); 40,000 samples per cell, seeds from names (tests.stats_calibration).
MEAN_G1_PAIRS: Final = (3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 60, 100, 200)
MEAN_G1_SIGMAS: Final = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 1.25, 1.5)
MEAN_G1: Final = np.array(
    [
        [0.0, 0.073, 0.125, 0.201, 0.261, 0.325, 0.456, 0.584, 0.686, 0.773],
        [0.0, 0.088, 0.191, 0.268, 0.367, 0.452, 0.643, 0.805, 0.942, 1.051],
        [0.0, 0.121, 0.240, 0.349, 0.447, 0.557, 0.771, 0.970, 1.123, 1.262],
        [0.0, 0.140, 0.266, 0.400, 0.518, 0.633, 0.896, 1.105, 1.276, 1.410],
        [0.0, 0.165, 0.330, 0.475, 0.627, 0.761, 1.072, 1.316, 1.524, 1.675],
        [0.0, 0.180, 0.361, 0.543, 0.702, 0.855, 1.205, 1.481, 1.705, 1.880],
        [0.0, 0.198, 0.389, 0.581, 0.762, 0.933, 1.313, 1.616, 1.864, 2.062],
        [0.0, 0.219, 0.423, 0.632, 0.832, 1.015, 1.437, 1.777, 2.052, 2.287],
        [0.0, 0.228, 0.465, 0.687, 0.912, 1.114, 1.586, 1.988, 2.311, 2.581],
        [0.0, 0.244, 0.487, 0.723, 0.963, 1.180, 1.709, 2.156, 2.522, 2.834],
        [0.0, 0.251, 0.504, 0.757, 0.992, 1.241, 1.809, 2.298, 2.712, 3.048],
        [0.0, 0.265, 0.529, 0.793, 1.060, 1.316, 1.946, 2.516, 3.003, 3.401],
        [0.0, 0.274, 0.551, 0.839, 1.123, 1.419, 2.150, 2.829, 3.441, 3.968],
        [0.0, 0.286, 0.573, 0.878, 1.188, 1.512, 2.378, 3.238, 4.051, 4.748],
        [0.0, 0.294, 0.594, 0.911, 1.249, 1.610, 2.642, 3.787, 4.940, 5.995],
    ]
)
# Pairs at which the decision interval meets the targets for a lognormal of this sigma,
# towards costs (docs/statistics.md, "pairs the skewed shapes need"); the first entry is
# the calibrated shape (targets met from 8 pairs on).
PAIRS_FOR_SIGMA: Final = ((CALIBRATED_SIGMA, 8), (0.5, 100), (0.75, 400))
MAX_CALIBRATED_PAIRS: Final = PAIRS_FOR_SIGMA[-1][1]


def sample_skewness(data: FloatArray) -> FloatArray:
    """Adjusted Fisher-Pearson skewness ``G1`` of each column of ``data`` ((n, C));
    NaN for fewer than 3 rows or a column without spread."""
    n = data.shape[0]
    if n < 3:
        return np.full(data.shape[1], np.nan)
    centered = data - data.mean(axis=0)
    m2 = np.mean(centered * centered, axis=0)
    m3 = np.mean(centered * centered * centered, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = m3 / m2**1.5 * (math.sqrt(n * (n - 1.0)) / (n - 2.0))
    return np.asarray(np.where(m2 > 0, g, np.nan))


def mean_g1(n: NDArray[np.int64] | int, sigma_column: int) -> FloatArray:
    """Tabulated mean ``G1`` at ``n`` pairs for :data:`MEAN_G1_SIGMAS` [sigma_column],
    interpolated in ``log n`` (clamped to the table's ends)."""
    return np.asarray(
        np.interp(np.log(n), np.log(MEAN_G1_PAIRS), MEAN_G1[:, sigma_column]), dtype=float
    )


def tolerated_sigma(n: NDArray[np.int64] | int) -> FloatArray:
    """The most skewed lognormal sigma the decision interval is calibrated for at ``n``
    pairs (:data:`PAIRS_FOR_SIGMA`; the calibrated shape below its first entry's pairs)."""
    sigma = np.full(np.shape(n), CALIBRATED_SIGMA)
    for calibrated, pairs in PAIRS_FOR_SIGMA:
        sigma = np.where(np.asarray(n) >= pairs, calibrated, sigma)
    return sigma


def tau(n: NDArray[np.int64] | int) -> FloatArray:
    """The gate's reference: the mean ``G1`` of ``n`` pairs from the most skewed shape
    tolerated at ``n`` (:func:`tolerated_sigma`)."""
    columns = np.stack([mean_g1(n, j) for j in range(len(MEAN_G1_SIGMAS))])
    which = np.searchsorted(MEAN_G1_SIGMAS, tolerated_sigma(n))
    return np.asarray(np.take_along_axis(columns, which[None], axis=0)[0])


@dataclass(frozen=True)
class ShapeVerdict:
    """Per [..., contrast, metric]: cohorts judged, their mean ``G1``, the direction of a
    detected skew (+1 towards increases/costs, -1 towards savings, 0 none) and the
    pairs needed (-1: more than :data:`MAX_CALIBRATED_PAIRS`; 0: not skewed)."""

    cohorts: NDArray[np.int64]
    mean_skewness: FloatArray
    direction: NDArray[np.int8]
    pairs_needed: NDArray[np.int64]

    @property
    def skewed(self) -> NDArray[np.bool_]:
        return np.asarray(self.direction != 0)


def judge_shape(skewness: FloatArray, n: NDArray[np.int64]) -> ShapeVerdict:
    """The gate over axis 0 (the cohorts) of ``skewness`` (NaN: not judged) and ``n``
    (the pairs behind each value): see the module docstring. Vectorised."""
    seen = np.isfinite(skewness)
    k = seen.sum(axis=0)
    counts, which = np.unique(np.maximum(n, 3), return_inverse=True)  # tau per distinct n
    ref = np.where(seen, tau(counts)[which.reshape(np.shape(n))], np.nan)
    g = np.where(seen, skewness, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(np.where(seen, g, 0.0), axis=0) / np.maximum(k, 1)
        excess_up = np.nansum(np.where(seen, g - ref, 0.0), axis=0) / np.maximum(k, 1)
        excess_down = np.nansum(np.where(seen, -g - ref, 0.0), axis=0) / np.maximum(k, 1)
        dev = np.where(seen, g - mean, 0.0)
        sd = np.sqrt(np.sum(dev * dev, axis=0) / np.maximum(k - 1, 1))
        # SciPy is imported here, when shapes are judged: the module's constants are read by
        # the CLI's start (pairlab power), which should not pay SciPy's import
        from scipy import special  # type: ignore[import-untyped]  # no stubs locked

        crit = special.stdtrit(np.maximum(k - 1, 1), 1.0 - SKEW_TEST_LEVEL)
        bound = crit * sd / np.sqrt(np.maximum(k, 1))
    judged = k >= MIN_COHORTS
    up = judged & (excess_up > bound)
    down = judged & (excess_down > bound) & ~up
    direction = np.where(up, 1, np.where(down, -1, 0)).astype(np.int8)
    needed = np.zeros(direction.shape, dtype=np.int64)
    for index in zip(*np.nonzero(direction), strict=True):
        column = (slice(None), *index)
        mask = seen[column]
        counts = n[column][mask]
        found = pairs_needed(float(direction[index]) * g[column][mask], counts)
        # skewed beyond what the cohorts' pairs tolerate: more than their largest count
        beyond = [p for _, p in PAIRS_FOR_SIGMA if p > int(counts.max())]
        floor = beyond[0] if beyond else -1
        needed[index] = -1 if found < 0 or floor < 0 else max(found, floor)
    return ShapeVerdict(k.astype(np.int64), np.asarray(mean), direction, needed)


def pairs_needed(skewness: FloatArray, n: NDArray[np.int64]) -> int:
    """Pairs at which the decision interval meets its targets for the shape these
    cohorts' ``G1`` (signed towards the tail) show: -1 when beyond the calibration."""
    observed = float(np.mean(skewness))
    counts, times = np.unique(np.maximum(n, 3), return_counts=True)
    weights = times / times.sum()
    expected = np.array(
        [float(np.dot(weights, mean_g1(counts, j))) for j in range(len(MEAN_G1_SIGMAS))]
    )
    sigma = float(np.interp(observed, expected, MEAN_G1_SIGMAS, right=math.inf))
    for calibrated, pairs in PAIRS_FOR_SIGMA:
        if sigma <= calibrated:
            return pairs
    return -1
