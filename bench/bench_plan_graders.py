"""Speed of the core suite's graders and of schedule planning.

* each command grader of the `core` suite, on fixture + solution (the passing, slower
  path): the slowest one's wall time, target < 1 s;
* plan_schedule for 100 tasks x 100 repetitions x 4 arms (40,000 episodes).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bench.result import Result
from pairlab.adapters.paths import catalog_dir
from pairlab.core.schedule import plan_schedule
from pairlab.core.schemas.catalog import CommandGrader, load_suite
from pairlab.core.schemas.episode import ARMS


def grader_times() -> dict[str, float]:
    suite = load_suite(catalog_dir(), "core")
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for task in suite.tasks:
            root = Path(tmp) / task.id
            shutil.copytree(suite.fixture_path(task), root)
            shutil.copytree(suite.solution_path(task), root / task.workspace, dirs_exist_ok=True)
            for grader in task.graders:
                if isinstance(grader, CommandGrader):
                    best = float("inf")
                    for _ in range(3):
                        started = time.perf_counter()
                        subprocess.run(
                            grader.run, cwd=root / task.workspace, capture_output=True, check=True
                        )
                        best = min(best, time.perf_counter() - started)
                    times[task.id] = best
    return times


def run() -> list[Result]:
    times = grader_times()
    slowest = max(times, key=lambda k: times[k])
    started = time.perf_counter()
    schedule = plan_schedule([f"task-{i}" for i in range(100)], ARMS, 100, 1, "bench")
    plan_s = time.perf_counter() - started
    assert len(schedule.entries) == 40_000
    median_s = sorted(times.values())[len(times) // 2]
    return [
        Result(
            f"slowest core grader ({slowest}), best of 3",
            times[slowest],
            "s",
            "< 1 s",
            times[slowest] < 1.0,
        ),
        Result("median core grader", median_s, "s", "< 1 s", median_s < 1.0),
        Result("plan 100 tasks x 100 reps x 4 arms", plan_s, "s", "< 2 s", plan_s < 2.0),
    ]


if __name__ == "__main__":
    for r in run():
        print(f"{r.name}: {r.figure:.3f} {r.unit} (target {r.target})")
