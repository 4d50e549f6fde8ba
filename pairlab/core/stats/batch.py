"""Many cohorts' intervals at once: the tails and the decision of a batch of column sets.

:func:`pairlab.core.stats.bootstrap.bootstrap_mean_intervals` finishes each set of
columns (one cohort's columns observed in the same pairs) on its own: four
tail selections and some thirty small NumPy calls, which cost more than the
resampling itself for a cohort of 10 pairs. :class:`IntervalBatch` resamples each
set as that function does (same generator, same draws, same products, same
``t*``, through the compiled loops) into rows of one shared pair of (rows, B)
arrays, and finishes all rows together: one selection call per tail for the whole
batch, and the interval and p-value arithmetic as whole-array operations. Each
row's numbers are those of the one-set path bit for bit: the tails are order
statistics of the row (the same values however the rows are grouped), and the
rest is elementwise IEEE arithmetic with the row's own ``n``
(``tests/unit/test_stats_kernels.py``).

Only the configuration of large analyses is batched: the percentile method, float32
sums, a decision interval. Anything else goes through the one-set path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from pairlab.core.stats import order_keys
from pairlab.core.stats.bootstrap import MeanIntervals, draw_resample_counts
from pairlab.core.stats.studentized import (
    ColumnStats,
    DecisionIntervals,
    column_stats,
    finish_decision_intervals,
    studentized_sums,
    t_critical,
)
from pairlab.core.stats.workspace import WORKSPACE

Tag = TypeVar("Tag")
FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class _Part(Generic[Tag]):
    tag: Tag
    start: int
    stop: int
    n: int
    estimate: FloatArray
    se: FloatArray
    degenerate: NDArray[np.bool_]
    t_obs: FloatArray
    at_most: NDArray[np.int64]
    at_least: NDArray[np.int64]


class IntervalBatch(Generic[Tag]):
    """Collects column sets (:meth:`add`) and finishes them together (:meth:`finish`)."""

    def __init__(
        self,
        *,
        n_resamples: int,
        confidence: float,
        decision_confidence: float,
        capacity: int = 128,
    ) -> None:
        self.n_resamples = n_resamples
        self.confidence = confidence
        self.decision_confidence = decision_confidence
        self.capacity = capacity
        self.rows = 0
        self.parts: list[_Part[Tag]] = []
        # per-thread scratch (the batch is used by one thread, then finished)
        self.s1 = WORKSPACE.get("batch_s1", (capacity, n_resamples), np.float32)
        self.tstar = WORKSPACE.get("batch_tstar", (capacity, n_resamples), np.float32)

    def fits(self, columns: int) -> bool:
        return self.rows + columns <= self.capacity

    def add(self, values: NDArray[np.float64], rng: np.random.Generator, tag: Tag) -> None:
        """Resample ``values`` ((n, C) finite, n >= 2, C <= capacity) with ``rng`` as
        :func:`~pairlab.core.stats.bootstrap.bootstrap_mean_intervals` does."""
        data = np.asarray(values, dtype=np.float64)
        n, columns = data.shape
        if n < 2 or not np.all(np.isfinite(data)) or columns > self.capacity:
            raise ValueError("a batched interval needs n >= 2 finite values per column")
        if not self.fits(columns):
            raise ValueError("batch full: finish it first")
        described = column_stats(data)
        self.add_described((data - described.estimate).astype(np.float32), described, rng, tag)

    def add_described(
        self,
        centered: NDArray[np.float32],
        described: ColumnStats,
        rng: np.random.Generator,
        tag: Tag,
    ) -> None:
        """:meth:`add` of values whose :func:`column_stats` and centered float32 values
        the caller has computed (``centered`` = ``(values - described.estimate)`` as
        float32; the checks of :meth:`add` are the caller's)."""
        n, columns = centered.shape
        if not self.fits(columns):
            raise ValueError("batch full: finish it first")
        counts = draw_resample_counts(rng, n, self.n_resamples, "float32", True)
        start, stop = self.rows, self.rows + columns
        found = studentized_sums(
            centered,
            counts,
            described.t_obs,
            compiled=True,
            out=(self.s1[start:stop], self.tstar[start:stop]),
        )
        self.parts.append(
            _Part(
                tag,
                start,
                stop,
                n,
                described.estimate,
                described.se,
                described.degenerate,
                described.t_obs,
                found.at_most,
                found.at_least,
            )
        )
        self.rows = stop

    def finish(self) -> list[tuple[Tag, MeanIntervals]]:
        """Every added set's intervals, in the order added; the batch is then empty."""
        parts, rows = self.parts, self.rows
        self.parts, self.rows = [], 0
        if not parts:
            return []

        def joined(name: str) -> Any:
            return np.concatenate([getattr(p, name) for p in parts])

        estimate, se, degenerate, t_obs = (
            joined(x) for x in ("estimate", "se", "degenerate", "t_obs")
        )
        at_most, at_least = joined("at_most"), joined("at_least")
        n = np.concatenate([np.full(p.stop - p.start, p.n, dtype=np.int64) for p in parts])
        t_crit = np.concatenate(
            [np.full(p.stop - p.start, t_critical(p.n, self.decision_confidence)) for p in parts]
        )
        # The reported percentile interval (bootstrap_mean_intervals' float32 branch).
        alpha = (1.0 - self.confidence) / 2.0
        low, high = order_keys.percentile_pair(self.s1[:rows], alpha, 1.0 - alpha)
        low = np.where(degenerate, estimate, estimate + low / n)
        high = np.where(degenerate, estimate, estimate + high / n)
        decision = finish_decision_intervals(
            self.tstar[:rows],
            n,
            at_most,
            at_least,
            ColumnStats(estimate, se, degenerate, t_obs),
            self.decision_confidence,
            t_crit,
        )
        no_fallback = np.zeros(rows, dtype=np.bool_)
        out = []
        for p in parts:
            cut = slice(p.start, p.stop)
            out.append(
                (
                    p.tag,
                    MeanIntervals(
                        estimate[cut],
                        low[cut],
                        high[cut],
                        degenerate[cut],
                        no_fallback[cut],
                        DecisionIntervals(
                            decision.low[cut],
                            decision.high[cut],
                            decision.p_saving[cut],
                            decision.p_increase[cut],
                        ),
                    ),
                )
            )
        return out
