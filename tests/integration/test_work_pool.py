"""Scale-out on a real Prefect work pool: pairs dispatched to two process workers.

One Prefect server (SQLite) for the module, a process work pool, the run-pair
deployment deployed with ``prefect deploy`` from infra/prefect.yaml, and two
``prefect worker start`` subprocesses (distinct names, ``--limit 1`` each). The
episodes run with ``sim-slow``: the simulator behind a 2-second start delay (a
copy of the repository's profiles plus that one file), so episodes overlap in
time unless the episode limit serialises them.

Shows: pairs spread over both workers, no episode ran twice, the global
concurrency limit (1 slot) never exceeded, results equal to an in-process run
with the same seed and run id; then a worker killed (SIGKILL, its process group
and the pair run's own) mid-episode: the run is marked Crashed by the
heartbeat automation, the pair is re-dispatched once to the other worker, and
every episode ends with exactly one record.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.prefect_server import PrefectServer, stop_process_group
from tests.support import PROFILES_DIR, REPO_ROOT, read_execution_log, require

pytestmark = [pytest.mark.prefect, pytest.mark.slow, pytest.mark.timeout(1500)]

POOL = "pairlab-test-pool"
LIMIT = "pairlab-episodes-test-account"
WORKERS = ("w1", "w2")
TASK = "fix-median"
ARMS = ["baseline", "optimizer"]
SLOW_COMMAND = 'command: [sh, -c, "sleep 2; exec simclient exec --format claude \\"$@\\"", sh]'
LEASE_S = 60
ZOMBIE_AFTER_S = 75  # heartbeats every 30 s on the workers


@dataclass
class Cluster:
    server: PrefectServer
    root: Path
    env: dict[str, str]
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)


def _run(argv: list[str], env: dict[str, str], timeout: float = 300) -> str:
    proc = subprocess.run(argv, env=env, cwd=REPO_ROOT, capture_output=True, timeout=timeout)
    out = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, f"{argv} failed:\n{out[-4000:]}"
    return out


def _online_workers(env: dict[str, str]) -> set[str]:
    code = (
        "import json\n"
        "from prefect.client.orchestration import get_client\n"
        "with get_client(sync_client=True) as c:\n"
        f"    ws = c.read_workers_for_work_pool({POOL!r})\n"
        "print(json.dumps([w.name for w in ws if str(w.status).upper().endswith('ONLINE')]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO_ROOT, capture_output=True, timeout=120
    )
    lines = out.stdout.decode().strip().splitlines()
    return set(json.loads(lines[-1])) if out.returncode == 0 and lines else set()


@pytest.fixture(scope="module")
def cluster(
    prefect_server: PrefectServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    require(shutil.which("sh") is not None, "a POSIX shell for the sim-slow profile")
    root = tmp_path_factory.mktemp("work-pool")
    profiles = root / "profiles"
    shutil.copytree(PROFILES_DIR, profiles)
    sim = (PROFILES_DIR / "sim.yaml").read_text(encoding="utf-8")
    slow = "\n".join(
        SLOW_COMMAND if line.startswith("command:") else line for line in sim.splitlines()
    )
    (profiles / "sim-slow.yaml").write_text(slow + "\n", encoding="utf-8")
    env = dict(prefect_server.env)
    env.update(
        {
            "PAIRLAB_PROFILES_DIR": str(profiles),
            "PAIRLAB_REPO_DIR": str(REPO_ROOT),
            "PAIRLAB_ZOMBIE_AFTER_S": str(ZOMBIE_AFTER_S),
            "PREFECT_WORKER_QUERY_SECONDS": "1",
            "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "30",
            "PREFECT_LOGGING_LEVEL": "INFO",
        }
    )
    env.pop("PAIRLAB_EPISODE_LIMIT", None)
    prefect = [sys.executable, "-m", "prefect", "--no-prompt"]
    _run([*prefect, "work-pool", "create", POOL, "--type", "process"], env)
    # The deployment file a team uses, deployed to the test pool.
    _run(
        [*prefect, "deploy", "--prefect-file", "infra/prefect.yaml", "-n", "run-pair", "-p", POOL],
        env,
    )
    cluster = Cluster(server=prefect_server, root=root, env=env)
    try:
        for name in WORKERS:
            with (root / f"{name}.log").open("wb") as log:  # the child keeps its own descriptor
                cluster.workers[name] = subprocess.Popen(
                    [
                        *prefect,
                        "worker",
                        "start",
                        "--pool",
                        POOL,
                        "--type",
                        "process",
                        "--name",
                        name,
                        "--limit",
                        "1",
                    ],
                    env={**env, "PAIRLAB_WORKER_NAME": name},
                    cwd=root,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        deadline = time.monotonic() + 240
        while _online_workers(env) != set(WORKERS):
            assert time.monotonic() < deadline, "workers did not come online"
            for name, proc in cluster.workers.items():
                assert proc.poll() is None, (root / f"{name}.log").read_text()[-3000:]
            time.sleep(2)
        yield cluster
    finally:
        for proc in cluster.workers.values():
            stop_process_group(proc, timeout=20)


EVAL_CODE = """
import json, sys
from flows.evidence_eval import evidence_eval
from flows.params import EvidenceEvalParams
result = evidence_eval(EvidenceEvalParams.model_validate_json(sys.argv[1]))
print("RESULT " + json.dumps({k: result[k] for k in ("run_id", "episodes", "failed")}))
"""


def _params(cluster: Cluster, name: str, run_id: str, *, repetitions: int, dispatch: bool) -> str:
    params: dict[str, Any] = {
        "task_filter": [TASK],
        "repetitions": repetitions,
        "arms": ARMS,
        "profile": "sim-slow",
        "seed": 7,
        "concurrency": 2,
        "run_id": run_id,
        "work_dir": str(cluster.root / name / "work"),
        "store": str(cluster.root / name / "store"),
    }
    if dispatch:
        params["dispatch"] = {
            "mode": "work-pool",
            "deployment": "run-pair/run-pair",
            "episode_limit": LIMIT,
            "episode_limit_slots": 1,
            "lease_s": LEASE_S,
            "redispatch": 1,
            "poll_s": 1,
        }
    return json.dumps(params)


def _start_eval(cluster: Cluster, name: str, params: str) -> subprocess.Popen[bytes]:
    with (cluster.root / f"{name}.log").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-c", EVAL_CODE, params],
            env=cluster.env,
            cwd=REPO_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _finish(cluster: Cluster, name: str, proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    try:
        proc.wait(timeout=900)
    finally:
        if proc.poll() is None:
            stop_process_group(proc, timeout=20)
    out = (cluster.root / f"{name}.log").read_text(errors="replace")
    assert proc.returncode == 0, out[-5000:]
    line = next(ln for ln in reversed(out.splitlines()) if ln.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    return result


def _episodes(cluster: Cluster, name: str, run_id: str) -> Path:
    return cluster.root / name / "work" / "runs" / run_id / "episodes"


def _records(episodes: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted(episodes.glob("*/record.json")):
        rec = json.loads(path.read_text())
        out[rec["episodeId"]] = rec
    return out


def _max_overlap(intervals: list[tuple[datetime, datetime]]) -> int:
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    best = cur = 0
    for _, delta in events:  # ends sort before starts at the same instant
        cur += delta
        best = max(best, cur)
    return best


USAGE_FIELDS = (
    "uncachedInputTokens",
    "cachedInputTokens",
    "cacheWrite5mTokens",
    "cacheWrite1hTokens",
    "outputTokens",
    "reasoningTokens",
    "totalTokens",
    "apiCalls",
    "deliveredTokens",
)


def _outcome(rec: dict[str, Any]) -> tuple[Any, ...]:
    """Usage vector and correctness of an episode (what must not depend on where it ran)."""
    checks = sorted((c["name"], c["passed"]) for c in rec["graderChecks"])
    return (
        *(rec[f] for f in USAGE_FIELDS),
        rec["success"],
        rec["correct"],
        rec["exitCode"],
        checks,
    )


def test_pairs_spread_over_two_workers_within_the_limit_and_equal_in_process(
    cluster: Cluster,
) -> None:
    run_id = "wp-spread"
    dispatched = _start_eval(
        cluster, "pool", _params(cluster, "pool", run_id, repetitions=3, dispatch=True)
    )
    reference = _start_eval(
        cluster, "ref", _params(cluster, "ref", run_id, repetitions=3, dispatch=False)
    )
    assert _finish(cluster, "pool", dispatched)["episodes"] == 6
    assert _finish(cluster, "ref", reference)["episodes"] == 6

    episodes = _episodes(cluster, "pool", run_id)
    records = _records(episodes)
    assert len(records) == 6
    workers_by_pair: dict[str, set[str]] = {}
    intervals = []
    for episode_id, rec in records.items():
        log = read_execution_log(episodes / episode_id)
        # exactly one attempt: one start, one end, on one worker, under the limit
        assert [e["event"] for e in log] == ["start", "end"], log
        assert log[0]["worker"] == log[1]["worker"] and log[0]["limit"] == LIMIT
        workers_by_pair.setdefault(rec["pairId"], set()).add(log[0]["worker"])
        intervals.append(
            (datetime.fromisoformat(log[0]["at"]), datetime.fromisoformat(log[1]["at"]))
        )
    # a pair runs on one worker (its arms in order); the pairs used both workers
    assert all(len(ws) == 1 for ws in workers_by_pair.values()), workers_by_pair
    assert set().union(*workers_by_pair.values()) == set(WORKERS)
    assert _max_overlap(intervals) <= 1
    # in planned order within each pair
    for pair_id in workers_by_pair:
        pair = sorted(
            (r for r in records.values() if r["pairId"] == pair_id), key=lambda r: r["order"]
        )
        assert [r["startedAt"] for r in pair] == sorted(r["startedAt"] for r in pair)

    # same seed and run id, in-process: identical usage and correctness per episode
    reference_records = _records(_episodes(cluster, "ref", run_id))
    assert set(reference_records) == set(records)
    for episode_id, rec in records.items():
        assert _outcome(rec) == _outcome(reference_records[episode_id]), episode_id
    assert all(r["totalTokens"] is not None for r in records.values())


def _flow_runs(cluster: Cluster, run_id: str) -> list[dict[str, Any]]:
    code = (
        "import json, sys\n"
        "from prefect.client.orchestration import get_client\n"
        "from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterTags\n"
        "with get_client(sync_client=True) as c:\n"
        "    runs = c.read_flow_runs(flow_run_filter=FlowRunFilter(tags=FlowRunFilterTags(all_=[sys.argv[1]])))\n"
        "print(json.dumps([{'id': str(r.id), 'name': r.name, 'state': r.state.type.value if r.state else None}"
        " for r in runs]))\n"
    )
    out = _run([sys.executable, "-c", code, f"run:{run_id}"], cluster.env)
    result: list[dict[str, Any]] = json.loads(out.strip().splitlines()[-1])
    return result


def test_killed_worker_mid_episode_the_pair_is_redispatched_never_lost_or_duplicated(
    cluster: Cluster,
) -> None:
    run_id = "wp-kill"
    name = "kill"
    proc = _start_eval(cluster, name, _params(cluster, name, run_id, repetitions=2, dispatch=True))
    episodes = _episodes(cluster, name, run_id)
    victim: dict[str, Any] | None = None
    deadline = time.monotonic() + 600
    while victim is None:
        assert time.monotonic() < deadline and proc.poll() is None, "no episode started"
        for path in sorted(episodes.glob("*/execution.jsonl")):
            log = read_execution_log(path.parent)
            if log and log[-1]["event"] == "start":
                victim = log[-1]
                break
        time.sleep(0.05)
    worker = cluster.workers[victim["worker"]]
    # the machine dies: the worker and the pair's flow-run process, no clean-up
    os.killpg(worker.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(os.getpgid(victim["pid"]), signal.SIGKILL)
    worker.wait()

    assert _finish(cluster, name, proc)["episodes"] == 4
    records = _records(episodes)
    assert len(records) == 4  # never lost; one record file per episode id
    survivor = next(w for w in WORKERS if w != victim["worker"])
    killed_log = read_execution_log(episodes / victim["episode_id"])
    ends = [e for e in killed_log if e["event"] == "end"]
    starts = [e for e in killed_log if e["event"] == "start"]
    # the interrupted attempt has no end; it ran again (once) on the surviving worker
    assert len(ends) == 1 and ends[0]["worker"] == survivor
    assert len(starts) == 2 and starts[0]["flow_run_id"] == victim["flow_run_id"]
    assert starts[1]["flow_run_id"] != victim["flow_run_id"]
    for episode_id in records:
        if episode_id != victim["episode_id"]:
            assert [e["event"] for e in read_execution_log(episodes / episode_id)].count("end") == 1
    runs = {r["id"]: r for r in _flow_runs(cluster, run_id)}
    assert runs[victim["flow_run_id"]]["state"] == "CRASHED"
    pair_runs = [r for r in runs.values() if r["name"].startswith(f"{TASK}#")]
    assert len(pair_runs) == 3  # two pairs, one re-dispatched once
