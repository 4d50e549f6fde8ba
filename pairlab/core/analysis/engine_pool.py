"""Who resamples which cohort: this thread, threads, or this process with worker processes.

:func:`run_cohorts` chooses, by the number of cohorts to resample (the numbers are the
same either way: a cohort's seed comes from its names, never from the schedule):

* below :data:`COMPILED_MIN_COHORTS`, the NumPy path (no compiler start-up);
* from there, the compiled loops (:mod:`pairlab.core.stats.kernels`), cohorts finished
  in batches (:mod:`pairlab.core.stats.batch`), in threads;
* from :data:`PROCESS_POOL_MIN_COHORTS` on (with more than one CPU), one thread of this
  process and ``workers - 1`` worker processes (``python -m pairlab.core.analysis.worker``)
  take chunks of :data:`CHUNK_COHORTS` cohorts from one queue until it is empty.

Why processes: the Python between the compiled loops (seeds, column statistics, the
batch's arithmetic) holds the GIL, so two threads of one process reached ~1.4 cores of
two (2,000 cohorts of 25 pairs: one thread 6.4 s; two threads 5.4 s wall, 9.3 s CPU),
while two processes side by side each ran as fast as one alone (bench/README.md).
Each worker has :data:`IN_FLIGHT` chunks, so it never waits for the next; a worker
still importing takes fewer; a worker that fails (cannot start, exits, answers
garbage) hands the chunks it held back to the queue and this process resamples them:
a failure costs time, never a result.

While cohorts are resampled OpenBLAS runs one thread (:mod:`pairlab.core.stats.blas`):
the cohorts are the parallelism.

Worker protocol (pickle over the worker's stdin/stdout, never leaving the pair of
processes): the settings, then one message per chunk, each answered by its
:data:`pairlab.core.analysis.engine.ChunkResults`; ``None`` ends the worker.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import IO, Any, Final

import numpy as np

from pairlab.core.analysis.engine import (
    ChunkResults,
    CohortBootstrap,
    Job,
    Settings,
    resample_chunk,
)
from pairlab.core.stats import blas, kernels

PROCESS_POOL_MIN_COHORTS: Final = 2_000
COMPILED_MIN_COHORTS: Final = 1_000
CHUNK_COHORTS: Final = 64  # cohorts per chunk (each finished in batches of rows)
IN_FLIGHT: Final = 2  # chunks a worker holds
WORKER_MODULE = "pairlab.core.analysis.worker"
SHARE_HERE = True  # this process takes chunks too (tests set False: the workers take all)


def run_cohorts(
    settings: Settings,
    results: dict[str, np.ndarray],
    jobs: list[Job],
    notes: list[list[str]],
    workers: int | None,
) -> str:
    """Resample every job's cohort into ``results``; return how: ``"compiled processes"``,
    ``"compiled threads"``, ``"compiled"``, ``"processes"``, ``"threads"`` or ``"serial"``
    (processes: with how many workers failed, if any)."""
    n_workers = workers or min(4, os.cpu_count() or 1)
    if len(jobs) >= COMPILED_MIN_COHORTS and kernels.compiled_enabled():
        settings = replace(settings, compiled=True)
    engine = CohortBootstrap(settings, results)
    chunks = [jobs[i : i + CHUNK_COHORTS] for i in range(0, len(jobs), CHUNK_COHORTS)]

    def run_here(chunk: list[Job]) -> None:
        if engine.batchable():
            engine.run_batched(chunk)
            return
        for idx, key, pair_ids, block, applies in chunk:
            engine.run(idx, key, pair_ids, block, applies, notes[idx])

    with blas.single_threaded():
        if n_workers > 1 and len(jobs) >= PROCESS_POOL_MIN_COHORTS:
            failed = run_shared(settings, results, chunks, notes, n_workers, run_here)
            how = "compiled processes" if settings.compiled else "processes"
            return f"{how} ({failed} failed: their chunks resampled here)" if failed else how
        # threads take a chunk (batched: per-thread scratch) or a cohort at a time
        units = chunks if engine.batchable() else [[job] for job in jobs]
        if n_workers > 1 and len(units) > 1:
            with ThreadPoolExecutor(max_workers=n_workers) as pool:
                list(pool.map(run_here, units))
            how = "threads"
        else:
            for unit in units:
                run_here(unit)
            how = "serial"
    if settings.compiled:
        return "compiled threads" if how == "threads" else "compiled"
    return how


class _Worker:
    """One worker process and the chunks it holds, oldest first."""

    def __init__(self, settings: Settings) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", WORKER_MODULE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # a failed worker's chunks are redone here
            # one BLAS thread per worker: the processes are the parallelism
            env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
        )
        self.held: deque[list[Job]] = deque()
        self._send(settings)

    def _send(self, message: Any) -> None:
        assert self.proc.stdin is not None
        pickle.dump(message, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.flush()

    def give(self, chunk: list[Job]) -> None:
        self.held.append(chunk)
        self._send(chunk)

    def answer(self) -> ChunkResults:
        assert self.proc.stdout is not None
        found: ChunkResults = pickle.load(self.proc.stdout)
        if len(found[0]) != len(self.held[0]):
            raise ValueError("a worker answered for another chunk")
        self.held.popleft()
        return found

    def close(self) -> None:
        try:
            self._send(None)
            self.proc.wait(timeout=10)
        except Exception:  # whatever went wrong, the worker is done
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def run_shared(
    settings: Settings,
    results: dict[str, np.ndarray],
    chunks: list[list[Job]],
    notes: list[list[str]],
    workers: int,
    run_here: Callable[[list[Job]], None],
) -> int:
    """Resample ``chunks`` here (``run_here`` fills ``results`` and ``notes``) and in
    ``workers - 1`` worker processes; returns how many workers failed."""
    todo: queue.SimpleQueue[list[Job]] = queue.SimpleQueue()
    for chunk in chunks:
        todo.put(chunk)
    lock = threading.Lock()
    failed = [0]

    def take() -> list[Job] | None:
        try:
            return todo.get_nowait()
        except queue.Empty:
            return None

    def store(answer: ChunkResults) -> None:
        indices, rows, chunk_notes = answer
        with lock:
            for name, values in rows.items():
                results[name][indices] = values
            for idx, found in zip(indices, chunk_notes, strict=True):
                notes[idx].extend(found)

    def feed() -> None:
        worker: _Worker | None = None
        try:
            worker = _Worker(settings)
            for _ in range(IN_FLIGHT):
                if (chunk := take()) is not None:
                    worker.give(chunk)
            while worker.held:
                answer = worker.answer()
                if (chunk := take()) is not None:
                    worker.give(chunk)
                store(answer)
        except Exception:  # its chunks are resampled here instead
            with lock:
                failed[0] += 1
            for chunk in worker.held if worker is not None else ():
                todo.put(chunk)
        finally:
            if worker is not None:
                worker.close()

    feeders = [threading.Thread(target=feed, daemon=True) for _ in range(workers - 1)]
    for thread in feeders:
        thread.start()
    while SHARE_HERE and (mine := take()) is not None:
        run_here(mine)
    for thread in feeders:
        thread.join()
    while (mine := take()) is not None:  # handed back by a worker that failed
        run_here(mine)
    return failed[0]


def serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """A worker's loop: the settings, then each chunk answered, until ``None``. Its input
    is read by a thread of its own, so the parent's next chunk never waits on this
    worker's answer (two pipes that each fill up would hold both processes)."""
    inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def read() -> None:
        try:
            while True:
                message = pickle.load(stdin)
                inbox.put(message)
                if message is None:
                    return
        except Exception:  # the parent is gone: stop
            inbox.put(None)

    threading.Thread(target=read, daemon=True).start()
    settings: Settings | None = inbox.get()
    if settings is None:
        return
    if settings.compiled:
        kernels.warm_up()  # loaded before the first chunk is taken
    with blas.single_threaded():
        while (chunk := inbox.get()) is not None:
            answer = resample_chunk(settings, chunk)
            pickle.dump(answer, stdout, protocol=pickle.HIGHEST_PROTOCOL)
            stdout.flush()
