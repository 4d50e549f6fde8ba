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
from pathlib import Path

from bench.result import Result
from pairlab.adapters.backends import make_backend
from pairlab.adapters.episode_build import episode_spec
from pairlab.adapters.paths import catalog_dir
from pairlab.adapters.profiles import load_named_profile
from pairlab.core.plan import PlannedEpisode
from pairlab.core.schemas.catalog import load_suite

REPEATS = 5


def time_backend(name: str) -> tuple[float, float]:
    suite = load_suite(catalog_dir(), "core")
    task = suite.tasks[0]
    profile = load_named_profile("sim")
    backend = make_backend(name)
    walls, runs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(REPEATS):
            pair = f"bench:{task.id}:{i}"
            spec = episode_spec(
                PlannedEpisode(
                    task_id=task.id,
                    repetition=i,
                    order=0,
                    arm="baseline",
                    pair_id=pair,
                    episode_id=f"{pair}:baseline",
                ),
                run_id="bench",
                suite=suite,
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
            walls.append(time.perf_counter() - started)
            assert outcome.exit_code == 0, outcome.stderr
            assert outcome.latency_ms is not None
            runs.append(outcome.latency_ms)
    return statistics.median(walls), statistics.median(runs)


def run() -> list[Result]:
    results = []
    wall, latency = time_backend("local")
    results.append(
        Result("episode, local: prepare..cleanup (median)", wall, "s", "< 2 s", wall < 2)
    )
    results.append(Result("episode, local: run latency (median)", latency, "ms", "info", True))
    from pairlab.adapters.backends.docker import docker_available

    if docker_available():
        wall, latency = time_backend("docker")
        results.append(
            Result("episode, docker: prepare..cleanup (median)", wall, "s", "< 5 s", wall < 5)
        )
        results.append(Result("episode, docker: run latency (median)", latency, "ms", "info", True))
    return results
