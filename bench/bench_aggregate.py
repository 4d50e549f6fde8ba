"""Issues 10 and 15: aggregate many cohorts - 1,000,000 episodes in 10,000 cohorts of 25
pairs, and 200,000 episodes in 5,000 cohorts of 10 pairs (the common shape: one cohort
per task x client x model) - in one run.

Generates the episodes directly as a polars frame (no pydantic: the benchmark
is the analysis, not the parser), runs the full cohort analysis (all contrasts
x all metrics, 10,000 resamples, the reported percentile interval and the
decision interval with its p-values, the decision labels) in a child process, then
``to_json`` and the ``effects.parquet`` frame, and reports the wall time, the CPU
time of the child and its worker processes, and the peak RSS (the RSS of that child
and its worker processes summed, sampled from /proc; never reported below the
child's own ``ru_maxrss``). A reference implementation - one
``scipy.stats.bootstrap`` percentile call per interval at the shape's pair count - is
timed (wall and CPU) on 400 intervals and extrapolated to the same interval
count; both ratios are reported (the analysis uses every core, the reference one).
Targets: >= 25x the reference (wall) for both shapes, < 4 GiB peak; issue 10's
< 30 s for the 1M shape is still printed.

Run alone: ``uv run python -m bench.bench_aggregate [--cohorts N] [--pairs P]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from bench.result import Result

ROOT = Path(__file__).resolve().parent.parent
ARMS = ("baseline", "optimizer", "retrieval", "full")
ARM_FACTOR = np.array([1.0, 0.9, 0.8, 0.75])  # true multiplicative effect per arm
CLIENTS = ("sim", "claude", "codex", "gemini")
TARGET_S, TARGET_GIB, TARGET_RATIO = 30.0, 4.0, 25.0


def generate_frame(n_cohorts: int, pairs: int, seed: int = 20240601) -> pl.DataFrame:
    """``n_cohorts * pairs * 4`` episode rows shaped like ``episodes_frame``."""
    rng = np.random.default_rng(seed)
    n_rows = n_cohorts * pairs * len(ARMS)
    cohort = np.repeat(np.arange(n_cohorts), pairs * len(ARMS))
    pair = np.tile(np.repeat(np.arange(pairs), len(ARMS)), n_cohorts)
    arm = np.tile(np.arange(len(ARMS)), n_cohorts * pairs)
    level = rng.lognormal(9.0, 1.0, n_cohorts)[cohort] * rng.lognormal(
        0.0, 0.3, n_rows // 4
    ).repeat(4)
    scale = level * ARM_FACTOR[arm] * rng.lognormal(0.0, 0.2, n_rows)
    client = cohort % len(CLIENTS)

    def tokens(share: float, null_mask: np.ndarray | None = None) -> pl.Series:
        values = np.round(scale * share * rng.lognormal(0.0, 0.1, n_rows))
        series = pl.Series(values)
        return series if null_mask is None else series.scatter(np.flatnonzero(null_mask), None)

    uncached, cached, output = tokens(0.3), tokens(0.6), tokens(0.1)
    latency = pl.Series(scale * 0.05 * rng.lognormal(0.0, 0.3, n_rows))
    latency = latency.scatter(np.flatnonzero(rng.random(n_rows) < 0.001), None)  # lost timings
    ints = pl.DataFrame({"c": cohort, "p": pair, "a": arm, "k": client})
    frame = ints.lazy().select(
        pl.format("bench:task-{}:{}:", pl.col("c"), pl.col("p")).alias("pairId"),
        pl.col("a").replace_strict(dict(enumerate(ARMS)), return_dtype=pl.String).alias("arm"),
        pl.col("k")
        .replace_strict(dict(enumerate(CLIENTS)), return_dtype=pl.String)
        .alias("client"),
        pl.format("1.{}", pl.col("c") % 3).alias("clientVersion"),
        pl.format("model-{}", pl.col("c") % 5).alias("model"),
        pl.lit("2025-01").alias("modelVersion"),
        pl.format("task-{}", pl.col("c")).alias("taskId"),
    )
    frame = frame.with_columns(
        pl.concat_str("pairId", "arm").alias("episodeId"), pl.lit("bench").alias("runId")
    ).collect()
    correct = rng.random(n_rows) < 0.8
    return frame.with_columns(
        pl.lit(None, dtype=pl.String).alias("stratum"),
        pl.lit(False).alias("excluded"),
        pl.lit(None, dtype=pl.String).alias("excludedReason"),
        pl.Series("correct", correct),
        pl.lit("exact").alias("joinMethod"),
        uncached.alias("uncachedInputTokens"),
        cached.alias("cachedInputTokens"),
        tokens(0.02).alias("cacheWrite5mTokens"),
        tokens(0.01, client >= 2).alias("cacheWrite1hTokens"),  # codex/gemini: not reported
        pl.lit(None, dtype=pl.Float64).alias("cacheWriteTokens"),
        output.alias("outputTokens"),
        tokens(0.05, client == 1).alias("reasoningTokens"),  # claude: not reported
        (uncached + cached + output).alias("totalTokens"),
        pl.Series(rng.poisson(scale / 2000.0).astype(np.float64)).alias("toolCalls"),
        latency.alias("latencyMs"),
        pl.Series(scale * 3e-6).alias("costUsd"),
        # list price: $/MTok per dimension; one model in 5 is not priced (null)
        pl.when(pl.Series(np.asarray(cohort) % 5 == 4))
        .then(None)
        .otherwise(uncached * 3e-6 + cached * 0.3e-6 + output * 15e-6)
        .alias("apiListPriceUsd"),
    )


def child(n_cohorts: int, pairs: int, resamples: int) -> dict[str, Any]:
    from pairlab.core.analysis.cohorts import analyse_cohorts, effects_frame

    t0 = time.perf_counter()
    frame = generate_frame(n_cohorts, pairs)
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t1, c1 = time.perf_counter(), time.process_time()
    analysis = analyse_cohorts(frame, run_id="bench", min_pairs=5, n_resamples=resamples)
    t2, c2 = time.perf_counter(), time.process_time()
    # With the compiled loops disabled (PAIRLAB_NUMPY_KERNELS=1), large analyses run in
    # worker processes (children of this one): count them too.
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    worker_cpu = (kids.ru_utime + kids.ru_stime) - (kids0.ru_utime + kids0.ru_stime)
    payload = analysis.to_json()  # what a run reports and writes (report.json)
    t3, c3 = time.perf_counter(), time.process_time()
    effects = effects_frame(payload)  # effects.parquet, from the same JSON form
    t4, c4 = time.perf_counter(), time.process_time()
    intervals = int(effects["ciLow"].is_not_null().sum())
    return {
        "rows": frame.height,
        "cohorts": len(payload["cohorts"]),
        "intervals": intervals,
        "generate_s": t1 - t0,
        "analyse_s": t2 - t1,
        "analyse_cpu_s": c2 - c1 + worker_cpu,
        "to_json_s": t3 - t2,
        "effects_frame_s": t4 - t3,
        # serial steps: their CPU time (the wall time above includes waiting for a core)
        "to_json_cpu_s": c3 - c2,
        "effects_frame_cpu_s": c4 - c3,
        "engine": analysis.engine,
    }


def _tree_rss_kib(root: int) -> int:
    """Current RSS of ``root`` and all its descendants (Linux /proc), in KiB."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
        except OSError:
            continue
        pid = int(entry)
        parents[pid] = int(fields.get("PPid", "0").strip() or 0)
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0]) if "VmRSS" in fields else 0
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in tree:
                tree.add(pid)
                frontier.append(pid)
    return sum(rss.get(pid, 0) for pid in tree)


def measure_child(n_cohorts: int, pairs: int, resamples: int) -> tuple[dict[str, Any], float]:
    """Run :func:`child` in a fresh interpreter; return its figures and the peak RSS in MiB
    of the child and its worker processes together (sampled every 200 ms; ru_maxrss of
    children is a maximum, not a sum, and counts a fork's pre-exec copy of its parent)."""
    cmd = [sys.executable, "-m", "bench.bench_aggregate", "--child", "--cohorts", str(n_cohorts)]
    cmd += ["--pairs", str(pairs), "--resamples", str(resamples)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    peak_kib = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_kib
        while not done.is_set():
            peak_kib = max(peak_kib, _tree_rss_kib(proc.pid))
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out = proc.stdout.read()
    done.set()
    sampler.join()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child failed with exit {proc.returncode}")
    return json.loads(out), max(peak_kib, usage.ru_maxrss) / 1024.0  # Linux: KiB


def reference_seconds_per_interval(
    pairs: int, resamples: int, samples: int = 400
) -> tuple[float, float]:
    """Mean wall and CPU time of one ``scipy.stats.bootstrap`` percentile interval over
    ``pairs`` diffs."""
    from scipy import stats

    rng = np.random.default_rng(7)
    data = rng.normal(-100.0, 50.0, (samples, pairs))
    stats.bootstrap((data[0],), np.mean, n_resamples=resamples, method="percentile", rng=1)
    started, cpu = time.perf_counter(), time.process_time()
    for i, row in enumerate(data):
        stats.bootstrap((row,), np.mean, n_resamples=resamples, method="percentile", rng=i)
    return (time.perf_counter() - started) / samples, (time.process_time() - cpu) / samples


SHAPES = ((10_000, 25), (5_000, 10))


def run_shape(n_cohorts: int, pairs: int, resamples: int = 10_000) -> list[Result]:
    started = time.perf_counter()
    figures, peak_mib = measure_child(n_cohorts, pairs, resamples)
    wall = time.perf_counter() - started
    analysis_s = figures["analyse_s"] + figures["to_json_s"] + figures["effects_frame_s"]
    per_interval, per_interval_cpu = reference_seconds_per_interval(pairs, resamples)
    reference_s = per_interval * figures["intervals"]
    reference_cpu_s = per_interval_cpu * figures["intervals"]
    ratio = reference_s / analysis_s
    # The reference runs in one process; the analysis uses every core. The CPU-time ratio
    # is what the same work costs either way, independent of the core count.
    cpu_s = figures["analyse_cpu_s"] + figures["to_json_cpu_s"] + figures["effects_frame_cpu_s"]
    cpu_ratio = reference_cpu_s / cpu_s
    print(
        json.dumps(
            {
                **figures,
                "child_wall_s": wall,
                "peak_rss_mib": peak_mib,
                "reference_per_interval_ms": per_interval * 1e3,
                "reference_per_interval_cpu_ms": per_interval_cpu * 1e3,
                "reference_extrapolated_s": reference_s,
            }
        ),
        file=sys.stderr,
    )
    rows = (
        f"{int(figures['rows']):,} episodes / {int(figures['cohorts']):,} cohorts of {pairs} pairs"
    )
    results = [
        Result(f"aggregate {rows}: analysis wall time", analysis_s, "s", "info", True),
        Result(
            f"aggregate {pairs}-pair shape: peak RSS of the process and its workers (sampled)",
            peak_mib,
            "MiB",
            f"< {TARGET_GIB * 1024:g} MiB",
            peak_mib < TARGET_GIB * 1024,
        ),
        Result(
            f"aggregate {pairs}-pair shape: speed-up vs scipy.stats.bootstrap per interval, wall "
            f"({int(figures['intervals']):,} intervals; {os.cpu_count()} cores vs one)",
            ratio,
            "x",
            f">= {TARGET_RATIO:g}x",
            ratio >= TARGET_RATIO,
        ),
        Result(
            f"aggregate {pairs}-pair shape: speed-up in CPU time (the same work, any core count)",
            cpu_ratio,
            "x",
            "info",
            True,
        ),
        Result(
            f"aggregate {pairs}-pair shape: CPU time of the analysis and its workers "
            f"(load {os.getloadavg()[0]:.1f})",
            cpu_s,
            "s",
            "info",
            True,
        ),
        Result(
            f"aggregate {pairs}-pair shape: of which to_json + effects.parquet frame (serial)",
            figures["to_json_s"] + figures["effects_frame_s"],
            "s",
            "info",
            True,
        ),
    ]
    if n_cohorts == 10_000 and pairs == 25:
        results.insert(
            1,
            Result(
                "aggregate 1M / 10,000 cohorts: analysis wall time (issue 10 target)",
                analysis_s,
                "s",
                f"< {TARGET_S:g} s",
                analysis_s < TARGET_S,
            ),
        )
    return results


def run(shapes: tuple[tuple[int, int], ...] = SHAPES, resamples: int = 10_000) -> list[Result]:
    """Both shapes, one after the other, in one run."""
    return [r for cohorts, pairs in shapes for r in run_shape(cohorts, pairs, resamples)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--cohorts", type=int, default=None)
    parser.add_argument("--pairs", type=int, default=None)
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.cohorts, args.pairs, args.resamples)))
        return
    shapes = SHAPES if args.cohorts is None else ((args.cohorts, args.pairs or 25),)
    for r in run(shapes, args.resamples):
        print(
            f"{r.name}: {r.figure:,.3g} {r.unit} (target {r.target}) {'PASS' if r.passed else 'MISS'}"
        )


if __name__ == "__main__":
    main()
