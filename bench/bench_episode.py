"""Per-episode cost of the execution backends, with the simulated client.

One full episode (prepare -> run -> collect -> cleanup) of the ``sim`` profile on
a core task, baseline arm, repeated; the median wall time per backend. Also the
latency the backend itself reports for the run step (monotonic clock). Docker is
skipped (not a MISS) when no engine is reachable.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.result import Result
from pairlab.adapters.backends import make_backend
from pairlab.adapters.backends.base import PreparedEpisode
from pairlab.adapters.episode.build import episode_spec
from pairlab.adapters.paths import catalog_dir
from pairlab.adapters.profiles import load_named_profile
from pairlab.core.schedule import PlannedEpisode
from pairlab.core.schemas.catalog import load_suite

REPEATS = 5


def time_episodes(
    backend_name: str,
    task_id: str,
    repeats: int,
    run_id: str,
    after: Callable[[PreparedEpisode], None] | None = None,
) -> list[tuple[float, float]]:
    """(prepare..cleanup wall s, run latency ms) of ``repeats`` baseline episodes of one task.

    ``after`` is called with each prepared episode once it is cleaned up, outside the
    timed span (the orchestration bench runs the bare comparison there, interleaved)."""
    suite = load_suite(catalog_dir(), "core")
    task = suite.task(task_id)
    profile = load_named_profile("sim")
    backend = make_backend(backend_name, run_id=run_id)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats):
            pair = f"{run_id}:{task.id}:{i}"
            planned = PlannedEpisode(
                task_id=task.id,
                repetition=i,
                order=0,
                arm="baseline",
                pair_id=pair,
                episode_id=f"{pair}:baseline",
            )
            spec = episode_spec(
                planned,
                run_id=run_id,
                suite=suite,
                entry=task,
                profile=profile,
                model=None,
                seed=0,
                keep_workspace=False,
                account_dir=Path(tmp) / "account",
            )
            started = time.perf_counter()
            prepared = backend.prepare(spec)
            outcome = backend.run(prepared)
            backend.collect(prepared, Path(tmp) / f"out-{i}")
            backend.cleanup(prepared)
            wall = time.perf_counter() - started
            assert outcome.exit_code == 0, outcome.stderr
            assert outcome.latency_ms is not None
            out.append((wall, outcome.latency_ms))
            if after is not None:
                after(prepared)
    return out


def time_backend(name: str) -> tuple[float, float]:
    task_id = load_suite(catalog_dir(), "core").tasks[0].id
    timings = time_episodes(name, task_id, REPEATS, "bench")
    return statistics.median(w for w, _ in timings), statistics.median(r for _, r in timings)


def run() -> list[Result]:
    results = []
    wall, latency = time_backend("local")
    results.append(
        Result("episode, local: prepare..cleanup (median)", wall, "s", "< 2 s", wall < 2)
    )
    results.append(Result("episode, local: run latency (median)", latency, "ms", "info", True))
    from pairlab.adapters.docker_engine import docker_available

    if docker_available():
        wall, latency = time_backend("docker")
        results.append(
            Result("episode, docker: prepare..cleanup (median)", wall, "s", "< 5 s", wall < 5)
        )
        results.append(Result("episode, docker: run latency (median)", latency, "ms", "info", True))
    return results
