"""Crash and resume: `pairlab eval --run-id R` killed with SIGKILL mid-run, then run again.

The first run is killed (its whole process group, so the simulator children die
too) once some but not all episode records exist -- preferably while an
episode has been collected but not yet recorded, the worst moment. The second
run with the same run id must skip the completed episodes (their record and the
simulator's truth file untouched, so they did not run again), re-run the
interrupted ones from scratch, and end with every planned episode exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e import eval_checks as checks
from tests.support import read_execution_log

RUN_ID = "e2e-resume"
TASKS = ["fix-median", "answer-cache-env"]
REPETITIONS = 2
ARMS = ["baseline", "optimizer", "retrieval", "full"]
PLANNED = len(TASKS) * REPETITIONS * len(ARMS)
KILL_DEADLINE_S = 600


def _argv(work: Path, store: Path) -> list[str]:
    argv = [
        str(Path(sys.executable).parent / "pairlab"),
        "eval",
        "--run-id",
        RUN_ID,
        "--repetitions",
        str(REPETITIONS),
    ]
    for task in TASKS:
        argv += ["--task", task]
    argv += ["--min-pairs", "2", "--concurrency", "2", "--seed", "5"]
    argv += ["--work-dir", str(work), "--store", str(store), "--json"]
    return argv


def _episode_state(episodes: Path) -> tuple[int, list[Path]]:
    """(episodes recorded, dirs of episodes collected but not yet recorded)."""
    recorded, in_flight = 0, []
    for d in episodes.glob("*"):
        if (d / "record.json").exists():
            recorded += 1
        elif (d / "collected" / "graph").exists():  # home, state, graph: copied in that order
            in_flight.append(d)
    return recorded, in_flight


def _snapshot(work: Path) -> dict[str, tuple[bytes, int, bytes, int]]:
    """Episode id -> (record bytes, record mtime, truth bytes, truth mtime) for recorded episodes."""
    out = {}
    for eid, d in checks.episode_dirs(work, RUN_ID).items():
        rec = d / "record.json"
        (truth,) = d.glob("collected/**/simclient-truth.json")
        out[eid] = (
            rec.read_bytes(),
            rec.stat().st_mtime_ns,
            truth.read_bytes(),
            truth.stat().st_mtime_ns,
        )
    return out


@pytest.mark.prefect
@pytest.mark.e2e
def test_killed_eval_resumes_without_duplicates_or_reruns(
    prefect_server: object, tmp_path: Path
) -> None:
    env = dict(prefect_server.env)  # type: ignore[attr-defined]
    work, store = tmp_path / "work", tmp_path / "store"
    episodes = work / "runs" / RUN_ID / "episodes"
    log = (tmp_path / "first-run.log").open("wb")
    first = subprocess.Popen(
        _argv(work, store),
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + KILL_DEADLINE_S
        while True:
            assert first.poll() is None, (
                f"first run ended before it could be killed:\n{(tmp_path / 'first-run.log').read_text()[-3000:]}"
            )
            recorded, in_flight = _episode_state(episodes) if episodes.is_dir() else (0, [])
            # Kill mid-episode when we can catch it (collected, not recorded); else after half.
            if recorded >= 2 and (in_flight or recorded >= PLANNED // 2):
                print(
                    f"killing the first run: {recorded} recorded, {len(in_flight)} collected not recorded"
                )
                break
            assert time.monotonic() < deadline, "first run made no progress"
            time.sleep(0.02)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
        log.close()
    assert first.returncode == -signal.SIGKILL

    before = _snapshot(work)
    assert 0 < len(before) < PLANNED
    assert not (store / "runs" / RUN_ID / "manifest.json").exists()

    second = subprocess.run(
        _argv(work, store),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-3000:]
    summary = json.loads(second.stdout)
    assert summary["run_id"] == RUN_ID
    assert summary["episodes"] == PLANNED

    # Completed episodes were skipped: record and simulator truth untouched (bytes and mtime).
    after = _snapshot(work)
    for eid, snap in before.items():
        assert after[eid] == snap, f"{eid} was executed again on resume"

    # The attempt logs agree: one attempt for each episode finished before the kill; an
    # interrupted one was attempted again after its half-collected outputs were cleared.
    dirs = checks.episode_dirs(work, RUN_ID)
    for eid, d in dirs.items():
        events = read_execution_log(d)
        assert sum(1 for e in events if e["event"] == "end") == 1, eid
        if eid in before:
            assert [e["event"] for e in events] == ["start", "end"], eid
    for d in in_flight:
        events = read_execution_log(d)
        assert [e["event"] for e in events] == ["start", "start", "end"], d.name
        assert "collected" in events[1]["cleared"], events[1]

    # Every planned episode exactly once, each with usage equal to what the simulator drew
    # (so an interrupted episode's half-collected files were not mixed into its re-run).
    records = checks.check_records(
        work, RUN_ID, tasks=TASKS, repetitions=REPETITIONS, arms=ARMS, backend="local"
    )
    checks.check_pair_order(work, RUN_ID, records)
    checks.check_usage_matches_truth(work, RUN_ID, records)
    planned = [e["episode_id"] for e in checks.schedule_entries(work, RUN_ID)]
    lines = (work / "runs" / RUN_ID / "episodes.jsonl").read_text().splitlines()
    assert [json.loads(line)["episodeId"] for line in lines] == planned
    checks.check_store(store, RUN_ID, planned)
