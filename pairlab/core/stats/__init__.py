"""Statistics for paired evaluations: bootstrap intervals, proportions, seeds, and the
skewness gate (:mod:`pairlab.core.stats.skew_gate`: which shapes the decision interval
may decide at a number of pairs).

Pure NumPy/SciPy; no knowledge of episodes or cohorts (that is
:mod:`pairlab.core.analysis.cohorts`).
"""

from pairlab.core.stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    MeanIntervals,
    bootstrap_mean_intervals,
    draw_resample_counts,
    draw_resample_indices,
    resampled_sums,
)
from pairlab.core.stats.proportions import (
    mcnemar_exact_p,
    newcombe_paired_interval,
    wilson_interval,
    z_value,
)
from pairlab.core.stats.seeds import derive_seed, make_rng

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "MeanIntervals",
    "bootstrap_mean_intervals",
    "derive_seed",
    "draw_resample_counts",
    "draw_resample_indices",
    "make_rng",
    "mcnemar_exact_p",
    "newcombe_paired_interval",
    "resampled_sums",
    "wilson_interval",
    "z_value",
]
