"""Resampling the cohorts of an analysis: per-cohort bootstrap, threads or worker processes.

:class:`CohortBootstrap` fills result arrays indexed [cohort, contrast, metric]
(:data:`RESULTS`): the estimate, the reported percentile (or BCa) interval and
the decision interval with its one-sided p-values, all from one shared resample
per set of pairs, and the sample skewness the skewness gate judges
(:mod:`pairlab.core.stats.skew_gate`; no resampling) (see :mod:`pairlab.core.analysis.cohorts` for the determinism contract).

From :data:`PROCESS_POOL_MIN_COHORTS` resampled cohorts on, the cohorts run in
worker processes instead of threads: drawing the resample counts (np.bincount)
holds the GIL, so two threads reached only ~1.15 cores on 2 (bench/README.md); a
worker costs ~1 s of imports, which pays off only for large analyses. Workers are
plain ``python -m pairlab.core.analysis.worker`` processes fed by pickle over stdin
(no multiprocessing: it re-imports the caller's ``__main__`` and cannot fork a
threaded process safely). Results are identical either way: seeds come from
names, never from the schedule.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Final

import numpy as np

from pairlab.core.analysis.metrics import METRICS, Contrast
from pairlab.core.stats import kernels
from pairlab.core.stats.batch import IntervalBatch
from pairlab.core.stats.bootstrap import MeanIntervals, Method, bootstrap_mean_intervals
from pairlab.core.stats.one_cohort import student_t
from pairlab.core.stats.seeds import make_rng
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
PROCESS_POOL_MIN_COHORTS = 2_000
COMPILED_MIN_COHORTS = 1_000
BATCH_COHORTS = 64  # cohorts per task of a thread (each finished in batches of rows)

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
        for cols, values, rng in self.column_sets(idx, key, pair_ids, block, applies):
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
        )
        for idx, key, pair_ids, block, applies in jobs:
            for cols, values, rng in self.column_sets(idx, key, pair_ids, block, applies):
                if not batch.fits(cols.size):
                    self._store_batch(batch)
                    if not batch.fits(cols.size):  # more columns than a batch holds
                        self._store(idx, cols, values, rng, [])
                        continue
                batch.add(values, rng, (idx, cols))
        self._store_batch(batch)

    def _store_batch(self, batch: IntervalBatch[tuple[int, np.ndarray]]) -> None:
        for (idx, cols), got in batch.finish():
            self._put(idx, cols, got)

    def column_sets(
        self,
        idx: int,
        key: tuple[str, ...],
        pair_ids: list[str],
        block: np.ndarray,
        applies: np.ndarray,
    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.random.Generator]]:
        """Fill the cohort's estimates and the resampled columns' sample skewness; yield
        each set of columns observed in the same pairs, its values and the generator of
        those pairs (seeded from their names)."""
        observed = ~np.isnan(block)
        counts = observed.sum(axis=0)
        estimate = self.results["estimate"]
        with np.errstate(invalid="ignore"):
            sums = np.where(observed, block, 0.0).sum(axis=0)
            estimate[idx] = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        estimate[idx][~applies] = np.nan
        gate = max(self.settings.min_pairs, 2)
        eligible = np.flatnonzero((applies[:, None] & (counts >= gate)).ravel())
        if eligible.size == 0:
            return
        flat = block.reshape(block.shape[0], -1)
        # Columns observed in the same pairs share one resample of those pairs.
        seen = ~np.isnan(flat[:, eligible])
        if seen.all():  # the usual case: one pattern, every pair
            patterns, which = seen[:, :1].T, np.zeros(eligible.size, dtype=np.int64)
        else:
            patterns, which = np.unique(seen.T, axis=0, return_inverse=True)
        run_id = self.settings.run_id
        for p, rows in enumerate(patterns):
            cols = eligible[which.ravel() == p]
            rng = make_rng(run_id, key, "pairs", [pair_ids[r] for r in np.flatnonzero(rows)])
            values = flat[rows][:, cols]
            self.results["skewness"][idx].reshape(-1)[cols] = sample_skewness(values)
            self.results["t_stat"][idx].reshape(-1)[cols] = student_t(values)
            yield cols, values, rng

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


def run_chunk(
    settings: Settings, jobs: Sequence[Job]
) -> list[tuple[int, dict[str, np.ndarray], list[str]]]:
    """Bootstrap a chunk of cohorts into local result rows (the worker's body)."""
    results = empty_results(len(jobs), len(settings.contrasts))
    engine = CohortBootstrap(settings, results)
    out = []
    for local, (idx, key, pair_ids, block, applies) in enumerate(jobs):
        notes: list[str] = []
        engine.run(local, key, pair_ids, block, applies, notes)
        out.append((idx, {name: arr[local] for name, arr in results.items()}, notes))
    return out


def run_cohorts(
    settings: Settings,
    results: dict[str, np.ndarray],
    jobs: list[Job],
    notes: list[list[str]],
    workers: int | None,
) -> str:
    """Resample every job's cohort into ``results``; return how: ``"compiled threads"``,
    ``"processes"``, ``"threads"`` or ``"serial"`` (the numbers are the same either way)."""
    n_workers = workers or min(4, os.cpu_count() or 1)
    if len(jobs) >= COMPILED_MIN_COHORTS and kernels.compiled_enabled():
        # The compiled loops release the GIL: threads. Worker processes were measured
        # slower here (200k episodes / 5,000 cohorts, load ~12: 100-139 s wall and 27-29 s
        # CPU against 66-85 s and 18-20 s in threads): each worker pays ~3 s of imports
        # and numba start-up.
        settings = replace(settings, compiled=True)
    elif n_workers > 1 and len(jobs) >= PROCESS_POOL_MIN_COHORTS:
        _run_in_processes(settings, results, jobs, notes, n_workers)
        return "processes"
    engine = CohortBootstrap(settings, results)
    if engine.batchable():
        # chunks of cohorts, each finished in batches by one thread (per-thread scratch)
        chunks = [jobs[i : i + BATCH_COHORTS] for i in range(0, len(jobs), BATCH_COHORTS)]
        if n_workers > 1:
            with ThreadPoolExecutor(max_workers=n_workers) as pool:
                list(pool.map(engine.run_batched, chunks))
        else:
            for chunk in chunks:
                engine.run_batched(chunk)
        return "compiled threads" if n_workers > 1 else "compiled"

    def one(job: Job) -> None:
        idx, key, pair_ids, block, applies = job
        engine.run(idx, key, pair_ids, block, applies, notes[idx])

    if n_workers > 1 and len(jobs) > 1:
        with ThreadPoolExecutor(max_workers=n_workers) as pool:
            list(pool.map(one, jobs))
    else:
        for job in jobs:
            one(job)
    if settings.compiled:
        return "compiled threads" if n_workers > 1 else "compiled"
    return "threads" if n_workers > 1 and len(jobs) > 1 else "serial"


def _run_in_processes(
    settings: Settings,
    results: dict[str, np.ndarray],
    jobs: list[Job],
    notes: list[list[str]],
    n_workers: int,
) -> None:
    chunks = [jobs[i::n_workers] for i in range(n_workers)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "pairlab.core.analysis.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # one BLAS thread per worker: the workers are the parallelism
            env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
        )
        for _ in chunks
    ]
    try:
        # Feed every worker before reading any result (each reads all its input first).
        for proc, chunk in zip(procs, chunks, strict=True):
            assert proc.stdin is not None
            pickle.dump((settings, chunk), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            proc.stdin.close()
        for proc in procs:
            assert proc.stdout is not None
            found: list[tuple[int, dict[str, Any], list[str]]] = pickle.load(proc.stdout)
            if proc.wait() != 0:
                raise RuntimeError(f"cohort worker exited with {proc.returncode}")
            for idx, rows, cohort_notes in found:
                for name, row in rows.items():
                    results[name][idx] = row
                notes[idx].extend(cohort_notes)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
