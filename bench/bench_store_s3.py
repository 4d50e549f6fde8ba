"""Publish and pull throughput against Garage (a real S3-compatible store) beside the local
store, for a 140-episode run (the demo's size) and a 10,000-episode run.

Each synthetic episode holds what a real one publishes most of: ``record.json`` (~2 KiB)
and a transcript-like ``stdout.txt`` (~8 KiB, redacted on publish), plus the run's own
files. Garage is one node on loopback (``pairlab.adapters.store.garage.GarageNode``: the
pinned binary, sqlite metadata, replication factor 1) with boto3's default client
configuration through the S3 adapter. Figures: objects/s and MB/s (payload bytes) for
``publish_run`` (redaction, hashing, upload, manifest last) and ``pull_run`` (download,
verification). Target (both stores, both sizes): >= 20 objects/s, so a 140-episode run
publishes in well under a minute and a 10,000-episode run in under half an hour; issue 28:
pulls from Garage >= 200 objects/s. Pulls are measured both ways in the same run: one
thread (``workers=1``, the way every pull went before issue 28) and the default pool
(``pairlab.adapters.store.runs.pull_workers``); the one-thread pull of the 10,000-episode
run is skipped unless ``PAIRLAB_BENCH_SERIAL_10K=1`` (it takes ~10 min from Garage).
Needs the Garage binary (scripts/build-garage.sh); without it only the local store runs.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from bench.result import Result
from pairlab.adapters.store import open_store
from pairlab.adapters.store.base import Store
from pairlab.adapters.store.publish import publish_run
from pairlab.adapters.store.runs import pull_run, pull_workers

SIZES = (140, 10_000)
TARGET_OBJECTS_PER_S = 20.0
TARGET_GARAGE_PULL_PER_S = 200.0  # issue 28


def _transcript(n: int, size: int = 8 * 1024) -> str:
    lines, total, i = [], 0, 0
    while total < size:
        line = json.dumps(
            {"type": "assistant", "message": {"content": f"episode {n} step {i}: ran the tests"}}
        )
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines) + "\n"


def write_run(root: Path, run_id: str, episodes: int) -> tuple[Path, int]:
    run_dir = root / "runs" / run_id
    total = 0
    for n in range(episodes):
        episode = run_dir / "episodes" / f"{run_id}:task-{n % 7}:{n // 28}:arm-{n % 4}"
        episode.mkdir(parents=True)
        record = json.dumps({"episodeId": episode.name, "n": n, "pad": "x" * 1900})
        (episode / "record.json").write_text(record, encoding="utf-8")
        (episode / "stdout.txt").write_text(_transcript(n), encoding="utf-8")
    (run_dir / "report.md").write_text("# bench run\n", encoding="utf-8")
    for path in run_dir.rglob("*"):
        if path.is_file():
            total += path.stat().st_size
    return run_dir, total


def _measure(
    label: str, store: Store, run_dir: Path, payload: int, dest: Path, *, serial: bool
) -> list[Result]:
    run_id = run_dir.name
    started = time.perf_counter()
    manifest = publish_run(run_dir, store)
    timings = [("publish", time.perf_counter() - started)]
    objects = len(manifest.objects) + 1  # + the manifest
    if serial:
        started = time.perf_counter()
        pull_run(store, run_id, dest.with_name(dest.name + "-serial"), workers=1)
        timings.append(("pull, one thread", time.perf_counter() - started))
    started = time.perf_counter()
    pull_run(store, run_id, dest)
    timings.append((f"pull, {pull_workers()} threads", time.perf_counter() - started))
    results = []
    for verb, took in timings:
        rate = objects / took
        target = TARGET_OBJECTS_PER_S
        if "Garage" in label and verb.startswith("pull"):
            target = TARGET_GARAGE_PULL_PER_S
        results.append(
            Result(
                f"{verb} {label}: {objects} objects, {payload / 1e6:.1f} MB "
                f"({took:.1f} s, {payload / 1e6 / took:.2f} MB/s)",
                rate,
                "objects/s",
                f">= {target:g} objects/s",
                rate >= target,
            )
        )
    return results


def run() -> list[Result]:
    from pairlab.adapters.store.garage import GarageNode, garage_binary

    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="pairlab-bench-s3-") as tmp:
        root = Path(tmp)
        node = None
        if garage_binary().is_file():
            node = GarageNode(root / "garage").start()
            key = node.create_key("bench")
            node.create_bucket("bench")
            node.allow("bench", key)
            os.environ.update(
                {
                    "AWS_ACCESS_KEY_ID": key.key_id,
                    "AWS_SECRET_ACCESS_KEY": key.secret,
                    "AWS_DEFAULT_REGION": "us-east-1",
                    "AWS_ENDPOINT_URL": node.endpoint,
                }
            )
        try:
            for episodes in SIZES:
                serial = episodes < 1_000 or os.environ.get("PAIRLAB_BENCH_SERIAL_10K") == "1"
                run_dir, payload = write_run(
                    root / f"src-{episodes}", f"bench-{episodes}", episodes
                )
                local = open_store(str(root / f"local-store-{episodes}"))
                results += _measure(
                    f"{episodes} episodes, local store",
                    local,
                    run_dir,
                    payload,
                    root / f"pulled-local-{episodes}",
                    serial=serial,
                )
                if node is not None:
                    garage = open_store(f"s3://bench/{episodes}")
                    results += _measure(
                        f"{episodes} episodes, Garage",
                        garage,
                        run_dir,
                        payload,
                        root / f"pulled-garage-{episodes}",
                        serial=serial,
                    )
        finally:
            if node is not None:
                node.stop()
    return results
