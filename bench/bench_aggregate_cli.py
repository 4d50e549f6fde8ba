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

Before/after: ``--before TREE`` (a checkout, e.g. ``git archive 6ca13d8 | tar -x -C
/tmp/before``) also runs that checkout's ``pairlab`` on the same log in the same run
(its package first on ``PYTHONPATH``, this environment's dependencies; a small log is
analysed first so its compiled loops are cached, as they are for the installed one).

Run alone: ``uv run python -m bench.bench_aggregate_cli [--cohorts N --pairs P] [--before TREE]``.
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


def run_cli(log: Path, out: Path, resamples: int, before: Path | None = None) -> dict[str, float]:
    """``pairlab aggregate LOG --json > OUT`` in a fresh process: wall, CPU, peak RSS
    (``before``: that checkout's ``pairlab`` instead of the installed one)."""
    cmd = [str(Path(sys.executable).with_name("pairlab")), "aggregate", str(log), "--json"]
    cmd += ["--resamples", str(resamples)]
    env = None
    if before is not None:
        entry = "import sys; from pairlab.cli import main; sys.argv[0] = 'pairlab'; main()"
        cmd = [sys.executable, "-c", entry, *cmd[1:]]
        env = {**os.environ, "PYTHONPATH": str(before.resolve())}
    started = time.perf_counter()
    with out.open("wb") as sink:
        proc = subprocess.Popen(cmd, cwd=before or ROOT, stdout=sink, env=env)
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


def _holds(old: Any, new: Any) -> bool:
    """``new`` has every value ``old`` has (fields added since are allowed)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(k in new and _holds(v, new[k]) for k, v in old.items())
    if isinstance(old, list):
        return (
            isinstance(new, list)
            and len(old) == len(new)
            and all(_holds(a, b) for a, b in zip(old, new, strict=True))
        )
    return bool(old == new)


def run_shape(
    n_cohorts: int, pairs: int, resamples: int = 10_000, before: Path | None = None
) -> list[Result]:
    with tempfile.TemporaryDirectory(prefix="pairlab-bench-cli-") as tmp:
        log, out = Path(tmp) / "episodes.jsonl", Path(tmp) / "analysis.json"
        episodes = write_episode_log(log, n_cohorts, pairs)
        log_mb = log.stat().st_size / 1e6
        figures = run_cli(log, out, resamples)
        out_mb = out.stat().st_size / 1e6
        payload: dict[str, Any] = orjson.loads(out.read_bytes())
        old: dict[str, float] | None = None
        if before is not None:
            warm = Path(tmp) / "warm.jsonl"
            write_episode_log(warm, 600, pairs)  # >= the compiled path's cohorts: cache it
            run_cli(warm, Path(tmp) / "warm.json", resamples, before)
            old = run_cli(log, Path(tmp) / "before.json", resamples, before)
            old_payload = json.loads((Path(tmp) / "before.json").read_bytes())
            if not _holds(old_payload, payload):
                raise RuntimeError("the checkout before gives other JSON content")
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
        *(
            []
            if old is None
            else [
                Result(
                    f"  {pairs}-pair shape: before ({before}), wall; "
                    f"{naive_s / old['wall_s']:.1f}x naive; CPU {old['cpu_s']:.1f} s",
                    old["wall_s"],
                    "s",
                    "info",
                    True,
                )
            ]
        ),
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


def run(
    shapes: tuple[tuple[int, int], ...] = SHAPES,
    resamples: int = 10_000,
    before: Path | None = None,
) -> list[Result]:
    """Both shapes, one after the other, in one run."""
    return [r for cohorts, pairs in shapes for r in run_shape(cohorts, pairs, resamples, before)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cohorts", type=int, default=None)
    parser.add_argument("--pairs", type=int, default=None)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--before", type=Path, default=None, help="a checkout to compare")
    args = parser.parse_args()
    shapes = SHAPES if args.cohorts is None else ((args.cohorts, args.pairs or 25),)
    for r in run(shapes, args.resamples, args.before):
        verdict = "PASS" if r.passed else "MISS"
        print(f"{r.name}: {r.figure:,.3g} {r.unit} (target {r.target}) {verdict}")


if __name__ == "__main__":
    main()
