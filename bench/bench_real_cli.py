"""Real-CLI episodes (issue 14, item 7): the backend's cost, and eval throughput.

* For each real CLI (claude, codex) and backend (local, docker): one baseline episode of
  ``fix-median`` through the backend (prepare -> run -> collect -> cleanup, the emulator
  started by a run endpoint) against the **bare invocation** of the same CLI command line
  and environment against the same emulator (a fresh workspace and HOME made by hand:
  locally a subprocess, on Docker a ``docker run --rm`` of the client image on the run's
  network with the episode's directories bind-mounted), interleaved; every episode is
  registered with the same seed, so both sides play the same script. Median of the
  per-pair ratios (target <= 1.3).
* Throughput of the evidence-eval flow with the real CLIs, concurrency 1 and 2 (a child
  process with its own PREFECT_HOME; 3 tasks x 4 arms x 2 repetitions = 24 episodes).

Needs the pinned CLI wheels (no rows without them); Docker rows need the engine.
Standalone: ``uv run python -m bench.bench_real_cli``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.result import Result

ROOT = Path(__file__).resolve().parent.parent
TASK = "fix-median"
SEED = 3
PAIRS = 5
THROUGHPUT_TASKS = ["fix-median", "refactor-rename-total", "answer-cache-env"]
THROUGHPUT_REPS = 2


def _bare_local(prepared: Any, fixture: Path, scratch: Path) -> float:
    """The same argv and environment, run by hand in fresh directories."""
    root = Path(prepared.root)
    bare = scratch / "bare"
    shutil.rmtree(bare, ignore_errors=True)
    shutil.copytree(fixture, bare / "workspace")
    for sub in ("home/.claude", "home/.codex", "home/.tmp", "state", "graph"):
        (bare / sub).mkdir(parents=True)

    def moved(value: str) -> str:
        return value.replace(str(root), str(bare))

    env = {k: moved(v) for k, v in prepared.env.items()}
    env.update({n: os.environ.get(n, "") for n in prepared.secret_names})
    env.update(_DUMMY)
    started = time.perf_counter()
    done = subprocess.run(
        [moved(a) for a in prepared.argv],
        env=env,
        cwd=moved(prepared.workdir),
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
        check=False,
    )
    took = time.perf_counter() - started
    assert done.returncode == 0, done.stderr[-2000:]
    return took


def _bare_docker(prepared: Any, fixture: Path, scratch: Path, network: Any, image: str) -> float:
    """``docker run --rm`` of the episode's command on the run network, directories
    bind-mounted (no volumes, no archive copies, nothing collected)."""
    bare = scratch / "bare"
    shutil.rmtree(bare, ignore_errors=True)
    shutil.copytree(fixture, bare / "workspace")
    for sub in (
        "agent/home/.claude",
        "agent/home/.codex",
        "agent/home/.tmp",
        "agent/state",
        "agent/graph",
    ):
        (bare / sub).mkdir(parents=True)
    for path in [bare, *bare.rglob("*")]:
        os.chown(path, 1000, 1000)
    options = network.episode_options()
    argv = ["docker", "run", "--rm", "--label", "pairlab.bench=real-cli", "-u", "1000:1000"]
    argv += ["--network", options["network_mode"], "-w", prepared.workdir]
    for alias, address in options["extra_hosts"].items():
        argv += ["--add-host", f"{alias}:{address}"]
    for host, bind in network.episode_binds().items():
        argv += ["-v", f"{host}:{bind['bind']}:ro"]
    argv += [
        "-v",
        f"{bare / 'workspace'}:/pairlab/workspace",
        "-v",
        f"{bare / 'agent'}:/pairlab/agent",
    ]
    for key, value in {**prepared.env, **_DUMMY}.items():
        argv += ["-e", f"{key}={value}"]
    started = time.perf_counter()
    done = subprocess.run(
        [*argv, image, *prepared.argv], capture_output=True, timeout=300, check=False
    )
    took = time.perf_counter() - started
    assert done.returncode == 0, done.stderr[-2000:]
    shutil.rmtree(bare, ignore_errors=True)
    return took


_DUMMY: dict[str, str] = {}


def episode_vs_bare(cli: str, backend_name: str) -> tuple[float, float, float] | None:
    """Medians of (backend episode s, bare invocation s, per-pair ratio)."""
    from pairlab.adapters.episode.build import episode_spec
    from pairlab.adapters.paths import catalog_dir
    from pairlab.adapters.profiles import load_named_profile
    from pairlab.adapters.run.provider import DUMMY_CREDENTIALS, open_run_endpoint
    from pairlab.core.schedule import PlannedEpisode
    from pairlab.core.schemas.catalog import load_suite

    profile = load_named_profile(cli)
    _DUMMY.clear()
    _DUMMY.update({k: v for k, v in DUMMY_CREDENTIALS.items() if k in profile.secrets})
    suite = load_suite(catalog_dir(), "core")
    task = suite.task(TASK)
    fixture = suite.fixture_path(task)
    ours: list[float] = []
    bare: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-real-cli-") as tmp:
        scratch = Path(tmp)
        run_id = f"bench-{cli}-{backend_name}"
        with open_run_endpoint(
            profile, run_id=run_id, backend_name=backend_name, ledger_dir=scratch / "emulator"
        ) as endpoint:
            backend = endpoint.backend
            for i in range(PAIRS + 1):  # the first pair warms caches (not counted)
                pair = f"{run_id}:{TASK}:{i}"
                planned = PlannedEpisode(
                    task_id=TASK,
                    repetition=i,
                    order=0,
                    arm="baseline",
                    pair_id=pair,
                    episode_id=f"{pair}:baseline",
                )
                ep = endpoint.register(
                    episode_id=planned.episode_id,
                    task_id=TASK,
                    arm="baseline",
                    repetition=i,
                    seed=SEED,
                )
                spec = episode_spec(
                    planned,
                    run_id=run_id,
                    suite=suite,
                    entry=task,
                    profile=endpoint.profile,
                    model=None,
                    seed=SEED,
                    keep_workspace=False,
                    account_dir=None,
                    endpoint_url=ep.url,
                )
                started = time.perf_counter()
                prepared = backend.prepare(spec)
                outcome = backend.run(prepared)
                backend.collect(prepared, scratch / f"out-{i}")
                backend.cleanup(prepared)
                took = time.perf_counter() - started
                assert outcome.exit_code == 0, outcome.stderr[-2000:]
                # the bare side: a fresh registration with the same seed, same script
                again = endpoint.register(
                    episode_id=f"{pair}:bare", task_id=TASK, arm="baseline", repetition=i, seed=SEED
                )
                bare_spec = spec.model_copy(update={"endpoint_url": again.url})
                if backend_name == "local":
                    prepared_bare = backend.prepare(bare_spec)  # only for its argv/env
                    backend.cleanup(prepared_bare)
                    other = _bare_local(prepared_bare, fixture, scratch)
                else:
                    from pairlab.adapters.backends.environment import build_argv

                    prepared_bare = prepared.model_copy(
                        update={
                            "argv": build_argv(bare_spec, prepared.workdir),
                            "env": {**prepared.env, **_retarget(prepared.env, ep.url, again.url)},
                        }
                    )
                    other = _bare_docker(
                        prepared_bare, fixture, scratch, endpoint.network, profile.image
                    )
                if i > 0:
                    ours.append(took)
                    bare.append(other)
    ratios = [o / b for o, b in zip(ours, bare, strict=True)]
    return statistics.median(ours), statistics.median(bare), statistics.median(ratios)


def _retarget(env: dict[str, str], old: str, new: str) -> dict[str, str]:
    return {k: v.replace(old, new) for k, v in env.items() if old in v}


def child_main() -> None:
    """Eval throughput in a fresh process (own PREFECT_HOME); prints one JSON object."""
    from flows.evidence_eval import evidence_eval
    from flows.params import EvidenceEvalParams

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-real-cli-tp-") as tmp:
        # a first tiny run starts the ephemeral server (not counted)
        evidence_eval(
            EvidenceEvalParams(
                profile="claude",
                task_filter=["fix-median"],
                repetitions=1,
                arms=["baseline", "optimizer"],
                min_pairs=2,
                store=f"{tmp}/s",
                work_dir=f"{tmp}/w0",
                run_id="warm",
            )
        )
        for cli in ("claude", "codex"):
            for concurrency in (1, 2):
                started = time.perf_counter()
                result = evidence_eval(
                    EvidenceEvalParams(
                        profile=cli,
                        task_filter=THROUGHPUT_TASKS,
                        repetitions=THROUGHPUT_REPS,
                        concurrency=concurrency,
                        min_pairs=2,
                        store=f"{tmp}/s",
                        work_dir=f"{tmp}/w-{cli}-{concurrency}",
                        run_id=f"tp-{cli}-{concurrency}",
                    )
                )
                took = time.perf_counter() - started
                out[f"{cli}-{concurrency}"] = result["episodes"] / took * 60.0
    print(json.dumps(out))


def throughput() -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-real-cli-home-") as home:
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
            [sys.executable, "-m", "bench.bench_real_cli", "--child"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=3600,
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"real-CLI throughput child failed:\n{proc.stderr[-4000:]}")
    figures: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return figures


def run() -> list[Result]:
    from pairlab.adapters.clients.registry import resolve_cli
    from pairlab.adapters.docker_engine import docker_available
    from pairlab.core.errors import EnvironmentUnavailable

    try:
        for cli in ("claude", "codex"):
            resolve_cli(cli)  # type: ignore[arg-type]
    except EnvironmentUnavailable:
        return []
    results: list[Result] = []
    backends = ["local", *(["docker"] if docker_available() else [])]
    for backend in backends:
        for cli in ("claude", "codex"):
            figures = episode_vs_bare(cli, backend)
            if figures is None:
                continue
            ours, bare, ratio = figures
            results += [
                Result(
                    f"{cli} episode, {backend} backend (prepare..cleanup)", ours, "s", "info", True
                ),
                Result(
                    f"{cli} bare invocation, same emulator ({backend})", bare, "s", "info", True
                ),
                Result(
                    f"{cli} {backend} episode / bare invocation (median of pairs)",
                    ratio,
                    "x",
                    "<= 1.3",
                    ratio <= 1.3,
                ),
            ]
    for key, per_min in throughput().items():
        cli, concurrency = key.split("-")
        results.append(
            Result(
                f"eval throughput, real {cli}, concurrency {concurrency}",
                per_min,
                "episodes/min",
                "info",
                True,
            )
        )
    return results


if __name__ == "__main__":
    if "--child" in sys.argv:
        child_main()
    else:
        for result in run():
            print(
                f"{result.name:70s} {result.figure:10.3f} {result.unit:14s} {result.target:10s} {'PASS' if result.passed else 'MISS'}"
            )
