"""Resampling the cohorts of an analysis: one cohort's bootstrap, into shared result arrays.

:class:`CohortBootstrap` fills result arrays indexed [cohort, contrast, metric]
(:data:`RESULTS`): the estimate, the reported percentile (or BCa) interval and
the decision interval with its one-sided p-values, all from one shared resample
per set of pairs, and the sample skewness the skewness gate judges
(:mod:`pairlab.core.stats.skew_gate`; no resampling) (see :mod:`pairlab.core.analysis.cohorts` for the determinism contract).
Who resamples which cohort (threads, worker processes) is
:mod:`pairlab.core.analysis.engine_pool`'s: results are identical either way, seeds
come from names, never from the schedule.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from pairlab.core.analysis.metrics import METRICS, Contrast
from pairlab.core.stats.batch import IntervalBatch
from pairlab.core.stats.bootstrap import MeanIntervals, Method, bootstrap_mean_intervals
from pairlab.core.stats.one_cohort import student_t
from pairlab.core.stats.seeds import make_rng
from pairlab.core.stats.set_stats import set_statistics
from pairlab.core.stats.skew_gate import sample_skewness

RESULTS: Final = (
    "estimate",
    "low",
    "high",
    "decision_low",
    "decision_high",
    "p_saving",
    "p_increase",
    "skewness",
    "t_stat",
)

# Cohorts whose column sets' statistics are computed together (set_stats): a chunk's.
_STATS_COHORTS: Final = 64
# Rows of a batch: four sets of a cohort's 55 columns per finish (128 held two; each finish
# is ~0.2 ms of small calls), at 2 x 10 MB of per-thread scratch for 10,000 resamples.
_BATCH_ROWS: Final = 256

# (cohort index, cohort key, pair ids, [pairs, contrast, metric] differences, applies[contrast])
Job = tuple[int, tuple[str, ...], list[str], np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Settings:
    run_id: str
    contrasts: list[Contrast]
    min_pairs: int
    n_resamples: int
    confidence: float
    method: Method
    decision_confidence: float
    compiled: bool = False  # the compiled loops (pairlab.core.stats.kernels): same numbers


def _distinct_columns(seen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(seen.T, axis=0, return_inverse=True)`` of an (n, C) boolean array: the
    distinct columns (as rows, in lexicographic order, False before True) and which one
    each column is; up to 62 rows each column is read as the integer of its bits (the
    first row the highest bit: the same order), one 1-d unique instead of a sort of
    structured rows."""
    n = seen.shape[0]
    if n > 62:
        patterns, which = np.unique(seen.T, axis=0, return_inverse=True)
        return patterns, which.ravel()
    codes = (1 << np.arange(n - 1, -1, -1, dtype=np.int64)) @ seen
    _, first, which = np.unique(codes, return_index=True, return_inverse=True)
    return seen.T[first], which.ravel()


def empty_results(cohorts: int, contrasts: int) -> dict[str, np.ndarray]:
    shape = (cohorts, contrasts, len(METRICS))
    return {name: np.full(shape, np.nan) for name in RESULTS}


class CohortBootstrap:
    """Bootstraps one cohort's (contrast, metric) columns into shared result arrays."""

    def __init__(self, settings: Settings, results: dict[str, np.ndarray]) -> None:
        self.settings = settings
        self.results = results

    def run(
        self,
        idx: int,
        key: tuple[str, ...],
        pair_ids: list[str],
        block: np.ndarray,
        applies: np.ndarray,
        notes: list[str],
    ) -> None:
        for cols, values, rng in self._patterns(idx, key, pair_ids, block, applies):
            self.results["skewness"][idx].reshape(-1)[cols] = sample_skewness(values)
            self.results["t_stat"][idx].reshape(-1)[cols] = student_t(values)
            self._store(idx, cols, values, rng, notes)

    def batchable(self) -> bool:
        """Whether cohorts can be finished in batches (:mod:`pairlab.core.stats.batch`)."""
        return self.settings.compiled and self.settings.method == "percentile"

    def run_batched(self, jobs: Sequence[Job]) -> None:
        """:meth:`run` for each of ``jobs``, the column sets finished in batches (same
        numbers; percentile method only: :meth:`batchable`)."""
        s = self.settings
        batch: IntervalBatch[tuple[int, np.ndarray]] = IntervalBatch(
            n_resamples=s.n_resamples,
            confidence=s.confidence,
            decision_confidence=s.decision_confidence,
            capacity=_BATCH_ROWS,
        )
        skewness, t_stat = self.results["skewness"], self.results["t_stat"]
        for first in range(0, len(jobs), _STATS_COHORTS):
            sets = [
                (idx, cols, values, rng)
                for idx, key, pair_ids, block, applies in jobs[first : first + _STATS_COHORTS]
                for cols, values, rng in self._patterns(idx, key, pair_ids, block, applies)
            ]
            # the sets' statistics side by side, the bits of each set's own (set_stats)
            described = set_statistics([values for _, _, values, _ in sets])
            for (idx, cols, values, rng), got in zip(sets, described, strict=True):
                skewness[idx].reshape(-1)[cols] = got.skewness
                t_stat[idx].reshape(-1)[cols] = got.t_stat
                if not batch.fits(cols.size):
                    self._store_batch(batch)
                    if not batch.fits(cols.size):  # more columns than a batch holds
                        self._store(idx, cols, values, rng, [])
                        continue
                if not got.finite:
                    raise ValueError("a batched interval needs n >= 2 finite values per column")
                batch.add_described(got.centered, got.columns, rng, (idx, cols))
        self._store_batch(batch)

    def _store_batch(self, batch: IntervalBatch[tuple[int, np.ndarray]]) -> None:
        for (idx, cols), got in batch.finish():
            self._put(idx, cols, got)

    def _patterns(
        self,
        idx: int,
        key: tuple[str, ...],
        pair_ids: list[str],
        block: np.ndarray,
        applies: np.ndarray,
    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.random.Generator]]:
        """Fill the cohort's estimates; yield each set of its columns observed in the same
        pairs, its values and the generator of those pairs (seeded from their names). The
        sets' statistics (skewness, Student's t) are the caller's."""
        observed = ~np.isnan(block)
        counts = observed.sum(axis=0)
        estimate = self.results["estimate"]
        with np.errstate(invalid="ignore"):
            sums = np.where(observed, block, 0.0).sum(axis=0)
            found = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        found[~applies] = np.nan
        estimate[idx] = found
        gate = max(self.settings.min_pairs, 2)
        eligible = np.flatnonzero((applies[:, None] & (counts >= gate)).ravel())
        if eligible.size == 0:
            return
        n = block.shape[0]
        flat = block.reshape(n, -1)
        run_id = self.settings.run_id
        # Columns observed in the same pairs share one resample of those pairs.
        seen = observed.reshape(n, -1)[:, eligible]
        if seen.all():  # the usual case: one pattern, every pair
            yield eligible, flat[seen[:, 0]][:, eligible], make_rng(run_id, key, "pairs", pair_ids)
            return
        patterns, which = _distinct_columns(seen)
        for p, rows in enumerate(patterns):
            cols = eligible[which.ravel() == p]
            rng = make_rng(run_id, key, "pairs", [pair_ids[r] for r in np.flatnonzero(rows)])
            yield cols, flat[rows][:, cols], rng

    def _store(
        self,
        idx: int,
        cols: np.ndarray,
        values: np.ndarray,
        rng: np.random.Generator,
        notes: list[str],
    ) -> None:
        s = self.settings
        got = bootstrap_mean_intervals(
            values,
            rng,
            n_resamples=s.n_resamples,
            confidence=s.confidence,
            method=s.method,
            decision_confidence=s.decision_confidence,
            compiled=s.compiled,
        )
        self._put(idx, cols, got)
        if s.method == "bca":
            n_m = len(METRICS)
            for flag, text in (
                (got.degenerate, "BCa undefined (all differences equal): degenerate interval"),
                (got.bca_fallback, "BCa correction not finite: percentile interval"),
            ):
                for col in cols[flag]:
                    j, i = divmod(int(col), n_m)
                    notes.append(f"{s.contrasts[j].label} {METRICS[i]}: {text}")

    def _put(self, idx: int, cols: np.ndarray, got: MeanIntervals) -> None:
        assert got.decision is not None
        found = {
            "estimate": got.estimate,
            "low": got.low,
            "high": got.high,
            "decision_low": got.decision.low,
            "decision_high": got.decision.high,
            "p_saving": got.decision.p_saving,
            "p_increase": got.decision.p_increase,
        }
        for name, values_of in found.items():
            self.results[name][idx].reshape(-1)[cols] = values_of


# (the chunk's cohort indices, their result rows [cohort, contrast, metric] per result
# name, their notes)
ChunkResults = tuple[list[int], dict[str, np.ndarray], list[list[str]]]


def resample_chunk(settings: Settings, jobs: Sequence[Job]) -> ChunkResults:
    """Bootstrap ``jobs`` into result rows of their own (a worker process's body), in
    batches when the settings allow (:meth:`CohortBootstrap.batchable`)."""
    results = empty_results(len(jobs), len(settings.contrasts))
    engine = CohortBootstrap(settings, results)
    local = [(i, *job[1:]) for i, job in enumerate(jobs)]
    notes: list[list[str]] = [[] for _ in jobs]
    if engine.batchable():
        engine.run_batched(local)
    else:
        for i, key, pair_ids, block, applies in local:
            engine.run(i, key, pair_ids, block, applies, notes[i])
    return [job[0] for job in jobs], results, notes
