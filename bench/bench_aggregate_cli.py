"""Issue 28: ``pairlab aggregate episodes.jsonl --json`` end to end, as a user runs it.

For each shape - 200,000 episodes in 5,000 cohorts of 10 pairs, and 1,000,000 episodes
in 10,000 cohorts of 25 pairs - the episodes of :func:`bench.bench_aggregate.generate_frame`
are written as an episode log (JSON lines, schema v2, every field as a record carries it),
then the installed ``pairlab`` command runs on it in a fresh process with its stdout
redirected to a file (``pairlab aggregate LOG --json > analysis.json``): interpreter
start, imports, reading and validating every line, the analysis, the JSON and writing it.
Timed: wall and CPU (the process and its threads; ``wait4``), and peak RSS (sampled).
The output is read back (its intervals counted: ``ciLow`` not null).

Beside it, in the same run, the naive way: one ``scipy.stats.bootstrap`` percentile call
per interval at the shape's pair count (:func:`bench.bench_aggregate.reference_seconds_per_interval`,
400 intervals, extrapolated to the interval count of the output). Targets: the CLI >= 25x
the naive way (wall) on both shapes; the 1M shape < 30 s.

Run alone: ``uv run python -m bench.bench_aggregate_cli [--cohorts N --pairs P]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from bench.bench_aggregate import _tree_rss_kib, generate_frame, reference_seconds_per_interval
from bench.result import Result

ROOT = Path(__file__).resolve().parent.parent
SHAPES = ((5_000, 10), (10_000, 25))
TARGET_RATIO, TARGET_1M_S = 25.0, 30.0
_INT_COLUMNS = (
    "uncachedInputTokens",
    "cachedInputTokens",
    "cacheWrite5mTokens",
    "cacheWrite1hTokens",
    "outputTokens",
    "reasoningTokens",
    "totalTokens",
    "toolCalls",
)


def write_episode_log(path: Path, n_cohorts: int, pairs: int) -> int:
    """The bench episodes as an episode log; returns the number of lines."""
    frame = generate_frame(n_cohorts, pairs)
    frame = frame.drop("cacheWriteTokens").with_columns(
        pl.lit(2).alias("schemaVersion"), *[pl.col(c).cast(pl.Int64) for c in _INT_COLUMNS]
    )
    frame.write_ndjson(path)
    return frame.height


def run_cli(log: Path, out: Path) -> dict[str, float]:
    """``pairlab aggregate LOG --json > OUT`` in a fresh process: wall, CPU, peak RSS."""
    pairlab = Path(sys.executable).with_name("pairlab")
    started = time.perf_counter()
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [str(pairlab), "aggregate", str(log), "--json"], cwd=ROOT, stdout=sink
        )
        peak_kib = 0
        done = threading.Event()

        def sample() -> None:
            nonlocal peak_kib
            while not done.is_set():
                peak_kib = max(peak_kib, _tree_rss_kib(proc.pid))
                done.wait(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        done.set()
        sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"pairlab aggregate failed with exit {proc.returncode}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mib": max(peak_kib, usage.ru_maxrss) / 1024.0,
    }


def run_shape(n_cohorts: int, pairs: int, resamples: int = 10_000) -> list[Result]:
    with tempfile.TemporaryDirectory(prefix="pairlab-bench-cli-") as tmp:
        log, out = Path(tmp) / "episodes.jsonl", Path(tmp) / "analysis.json"
        episodes = write_episode_log(log, n_cohorts, pairs)
        log_mb = log.stat().st_size / 1e6
        figures = run_cli(log, out)
        out_mb = out.stat().st_size / 1e6
        payload: dict[str, Any] = orjson.loads(out.read_bytes())
    intervals = sum(
        e["ciLow"] is not None for c in payload["cohorts"] for e in c.get("effects", [])
    )
    per_interval, per_interval_cpu = reference_seconds_per_interval(pairs, resamples)
    naive_s, naive_cpu_s = per_interval * intervals, per_interval_cpu * intervals
    ratio, cpu_ratio = naive_s / figures["wall_s"], naive_cpu_s / figures["cpu_s"]
    load = os.getloadavg()[0]
    print(
        json.dumps(
            {
                "episodes": episodes,
                "cohorts": len(payload["cohorts"]),
                "intervals": intervals,
                "log_mb": log_mb,
                "json_mb": out_mb,
                **figures,
                "naive_per_interval_ms": per_interval * 1e3,
                "naive_per_interval_cpu_ms": per_interval_cpu * 1e3,
                "naive_extrapolated_s": naive_s,
                "load": load,
            }
        ),
        file=sys.stderr,
    )
    shape = f"{episodes:,} episodes / {n_cohorts:,} cohorts of {pairs} pairs"
    results = [
        Result(
            f"pairlab aggregate --json, {shape}: wall ({log_mb:.0f} MB in, {out_mb:.0f} MB out; "
            f"load {load:.1f})",
            figures["wall_s"],
            "s",
            f"< {TARGET_1M_S:g} s" if episodes == 1_000_000 else "info",
            figures["wall_s"] < TARGET_1M_S if episodes == 1_000_000 else True,
        ),
        Result(
            f"  {pairs}-pair shape: vs naive scipy.stats.bootstrap per interval, wall "
            f"({intervals:,} intervals, naive {per_interval * 1e3:.2f} ms each)",
            ratio,
            "x",
            f">= {TARGET_RATIO:g}x",
            ratio >= TARGET_RATIO,
        ),
        Result(f"  {pairs}-pair shape: the same in CPU time", cpu_ratio, "x", "info", True),
        Result(f"  {pairs}-pair shape: CPU time of the CLI", figures["cpu_s"], "s", "info", True),
        Result(
            f"  {pairs}-pair shape: peak RSS of the CLI",
            figures["peak_rss_mib"],
            "MiB",
            "info",
            True,
        ),
    ]
    return results


def run(shapes: tuple[tuple[int, int], ...] = SHAPES, resamples: int = 10_000) -> list[Result]:
    """Both shapes, one after the other, in one run."""
    return [r for cohorts, pairs in shapes for r in run_shape(cohorts, pairs, resamples)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cohorts", type=int, default=None)
    parser.add_argument("--pairs", type=int, default=None)
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()
    shapes = SHAPES if args.cohorts is None else ((args.cohorts, args.pairs or 25),)
    for r in run(shapes, args.resamples):
        verdict = "PASS" if r.passed else "MISS"
        print(f"{r.name}: {r.figure:,.3g} {r.unit} (target {r.target}) {verdict}")


if __name__ == "__main__":
    main()
