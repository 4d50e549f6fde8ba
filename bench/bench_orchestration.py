"""Orchestration overhead (issue 10): the evidence-eval flow against the same work without Prefect.

* Local backend, N simulated episodes (1 task x REPS repetitions x 4 arms, one
  pair at a time): wall time of the ``evidence-eval`` flow (in-process, on the
  embedded ephemeral server) vs the *same code path* with every Prefect task
  replaced by its plain function and no flow (plan, episodes in planned order,
  aggregate, report files, publish). The one-off ephemeral server start is
  measured separately (first trivial flow of a fresh PREFECT_HOME) and the ratio
  is reported both without and with it; so is the fixed cost of any flow run
  (an empty flow: mostly Prefect joining its heartbeat thread, which sleeps in
  1 s steps) and what remains per episode.
* Docker backend: one episode through the backend (prepare -> run -> collect ->
  cleanup) vs a bare ``docker run --rm`` of the same simulator command with the
  same environment (so the simulator draws the same tokens), interleaved.
* Throughput of the flow at concurrency 1, 2, 4 (episodes/minute, 4 pairs).

The Prefect part runs in a child process with its own PREFECT_HOME so the
server start is real and nothing leaks into other benchmarks. Standalone:
``uv run python -m bench.bench_orchestration``.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.result import Result

TASK = "fix-median"
# 64 episodes (16 pairs), about the size of a small eval (the demo runs 140). Prefect's
# fixed cost per flow run (~0.5-1 s, measured separately below) is paid once per run.
OVERHEAD_REPS = 16
THROUGHPUT_REPS = 4  # 16 episodes, 4 pairs
DOCKER_REPEATS = 9  # interleaved episode / bare run pairs
ROOT = Path(__file__).resolve().parent.parent


def _params(tmp: Path, run_id: str, reps: int, concurrency: int, backend: str = "local") -> Any:
    from flows.params import EvidenceEvalParams

    return EvidenceEvalParams(
        task_filter=[TASK],
        repetitions=reps,
        concurrency=concurrency,
        min_pairs=2,
        backend=backend,  # type: ignore[arg-type]
        run_id=run_id,
        store=str(tmp / "store"),
        work_dir=str(tmp / "work"),
    )


# Where the evidence-eval flow calls each episode task (tasks/episode.py).
_TASK_SITES = {
    "flows.evidence_eval": (
        "prepare_episode",
        "run_measured",
        "collect_and_grade",
        "teardown_episode",
        "record_episode",
    ),
}


def _plain(fn: Any) -> Any:
    """The task's plain function, taking the quote()-wrapped arguments the flow passes."""
    from prefect.utilities.annotations import quote

    def call(*args: Any, **kwargs: Any) -> Any:
        args = tuple(a.unquote() if isinstance(a, quote) else a for a in args)
        kwargs = {k: v.unquote() if isinstance(v, quote) else v for k, v in kwargs.items()}
        return fn(*args, **kwargs)

    return call


@contextlib.contextmanager
def _plain_functions() -> Iterator[None]:
    """Make the flows call each task's plain function (no Prefect engine)."""
    import importlib

    saved = [
        (module, name, getattr(module, name))
        for module_name, names in _TASK_SITES.items()
        for module in [importlib.import_module(module_name)]
        for name in names
    ]
    try:
        for module, name, task in saved:
            setattr(module, name, _plain(task.fn))
        yield
    finally:
        for module, name, task in saved:
            setattr(module, name, task)


def direct_eval(params: Any) -> int:
    """The flow's work without Prefect: same episode code, sequential pairs, same outputs."""
    import flows.evidence_eval as ev
    from pairlab.adapters.backends.factory import make_backend
    from pairlab.adapters.episode.io import load_eval_inputs, sim_account_dir
    from pairlab.adapters.run.directory import RunDir
    from pairlab.adapters.run.outputs import publish_outputs, write_run_outputs
    from pairlab.core.analysis.cohorts import analyse_cohorts, resolve_min_pairs
    from pairlab.core.schedule import plan_schedule

    suite, profile = load_eval_inputs(params.suite, params.profile)
    schedule = plan_schedule(
        [TASK], list(params.arms), params.repetitions, params.seed, params.run_id
    )
    run_dir = RunDir(Path(params.work_dir), params.run_id).ensure()
    run_dir.write_json("schedule.json", schedule.model_dump(mode="json"))
    backend = make_backend(params.backend, run_id=params.run_id)
    account = sim_account_dir(Path(params.work_dir), profile)
    records = []
    with _plain_functions():
        for pair in schedule.pairs():  # the flow's run-pair task body, called as a function
            records += ev.run_pair.fn(
                pair,
                params=params,
                suite=suite,
                profile=profile,
                backend=backend,
                run_dir=run_dir,
                account_dir=account,
                done={},
            )
    analysis = analyse_cohorts(
        records, run_id=params.run_id, min_pairs=resolve_min_pairs(params.min_pairs)
    ).to_json()
    planned_ids = [e.episode_id for e in schedule.entries]
    write_run_outputs(run_dir, records, planned_ids, analysis, params, profile, schedule)
    publish_outputs(run_dir.path, params.store, params.on_secret)
    return len(records)


def child_main() -> None:
    """Runs in a fresh process with its own PREFECT_HOME; prints one JSON object."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-orch-") as tmp_name:
        tmp = Path(tmp_name)
        # Direct first (no Prefect server exists yet), twice; best of two.
        direct = []
        for i in range(2):
            started = time.perf_counter()
            n = direct_eval(_params(tmp / f"d{i}", f"direct-{i}", OVERHEAD_REPS, 1))
            direct.append(time.perf_counter() - started)
        out["episodes"] = n
        out["direct_s"] = min(direct)

        from prefect import flow

        @flow(name="bench-noop")
        def noop() -> int:
            return 1

        started = time.perf_counter()
        noop()
        first = time.perf_counter() - started
        started = time.perf_counter()
        noop()
        out["noop_flow_s"] = time.perf_counter() - started
        out["server_start_s"] = first - out["noop_flow_s"]

        from flows.evidence_eval import evidence_eval

        flows_s = []
        for i in range(2):
            started = time.perf_counter()
            result = evidence_eval(_params(tmp / f"f{i}", f"flow-{i}", OVERHEAD_REPS, 1))
            flows_s.append(time.perf_counter() - started)
            assert result["episodes"] == n, result
        out["flow_s"] = min(flows_s)

        out["throughput"] = {}
        for c in (1, 2, 4):
            started = time.perf_counter()
            result = evidence_eval(_params(tmp / f"t{c}", f"tp-{c}", THROUGHPUT_REPS, c))
            took = time.perf_counter() - started
            out["throughput"][str(c)] = result["episodes"] / took * 60.0
    print(json.dumps(out))


def _prefect_figures() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-orch-home-") as home:
        env = dict(os.environ)
        env.update(
            {
                "PREFECT_HOME": home,
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "DO_NOT_TRACK": "1",
                "PREFECT_LOGGING_LEVEL": "WARNING",
                "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
                "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
            }
        )
        env.pop("PREFECT_API_URL", None)
        proc = subprocess.run(
            [sys.executable, "-m", "bench.bench_orchestration", "--child"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"orchestration bench child failed:\n{proc.stderr[-4000:]}")
    figures: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return figures


def bare_docker_argv(prepared: Any, image: str, user: tuple[int, int]) -> list[str]:
    """``docker run`` of the episode's own command and environment, without pairlab.

    Same image, argv, user, network mode and environment (so the simulator draws the
    same tokens and spends the same time), with the episode's mount paths pointed at
    ``/tmp`` inside the container: no volumes, no fixture, nothing collected.
    """

    def bare(value: str) -> str:
        return value.replace(prepared.workdir, "/tmp").replace("/pairlab/", "/tmp/")

    argv = ["docker", "run", "--rm", "--network", prepared.spec.profile.network]
    argv += ["--user", f"{user[0]}:{user[1]}"]
    for key, value in sorted(prepared.env.items()):
        argv += ["-e", f"{key}={bare(value)}"]
    return [*argv, image, *(bare(a) for a in prepared.argv)]


def docker_figures() -> tuple[float, float, float] | None:
    """Medians of (backend episode s, bare docker run s, per-episode ratio); None without Docker.

    Each episode is followed by the bare ``docker run`` of the same command, so slow
    phases of the host hit both sides alike."""
    from bench.bench_episode import time_episodes
    from pairlab.adapters.backends.docker import DEFAULT_USER
    from pairlab.adapters.docker_engine import docker_available
    from pairlab.adapters.profiles import load_named_profile

    if not docker_available():
        return None
    image = load_named_profile("sim").image
    bare: list[float] = []

    def run_bare(prepared: Any) -> None:
        argv = bare_docker_argv(prepared, image, DEFAULT_USER)
        started = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True, timeout=120)
        bare.append(time.perf_counter() - started)

    ours = [w for w, _ in time_episodes("docker", TASK, DOCKER_REPEATS, "bench-orch", run_bare)]
    ratios = [o / b for o, b in zip(ours, bare, strict=True)]
    return statistics.median(ours), statistics.median(bare), statistics.median(ratios)


def run() -> list[Result]:
    f = _prefect_figures()
    n = f["episodes"]
    ratio = f["flow_s"] / f["direct_s"]
    ratio_start = (f["flow_s"] + f["server_start_s"]) / f["direct_s"]
    results = [
        Result(
            f"eval flow vs direct, local, {n} episodes: direct", f["direct_s"], "s", "info", True
        ),
        Result(f"eval flow vs direct, local, {n} episodes: flow", f["flow_s"], "s", "info", True),
        Result("eval flow / direct (server already up)", ratio, "x", "<= 1.25", ratio <= 1.25),
        Result("fixed cost per flow run (an empty flow)", f["noop_flow_s"], "s", "info", True),
        Result(
            "Prefect cost per episode beyond the fixed cost",
            (f["flow_s"] - f["direct_s"] - f["noop_flow_s"]) / n * 1000.0,
            "ms",
            "info",
            True,
        ),
        Result("ephemeral server start (one-off)", f["server_start_s"], "s", "info", True),
        Result("eval flow / direct incl. server start", ratio_start, "x", "info", True),
    ]
    for c, per_min in f["throughput"].items():
        results.append(
            Result(f"eval throughput, concurrency {c}", per_min, "episodes/min", "info", True)
        )
    dock = docker_figures()
    if dock is not None:
        ours, bare, ratio = dock
        results.append(Result("docker episode (prepare..cleanup)", ours, "s", "info", True))
        results.append(Result("bare docker run, same command and env", bare, "s", "info", True))
        results.append(
            Result(
                "docker episode / bare docker run (median of pairs)",
                ratio,
                "x",
                "<= 1.3",
                ratio <= 1.3,
            )
        )
    return results


if __name__ == "__main__":
    if "--child" in sys.argv:
        child_main()
    else:
        for r in run():
            print(
                f"{r.name}: {r.figure:.3g} {r.unit} (target {r.target}) {'PASS' if r.passed else 'MISS'}"
            )
