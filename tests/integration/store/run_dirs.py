"""Hand-built run directories in the run dir layout (DESIGN 11), for the store tests."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import polars as pl

from pairlab.core.schemas.episode import EpisodeRecord, make_episode_id, make_pair_id


def tiny_png() -> bytes:
    """A valid 1x1 PNG (binary, not UTF-8 decodable)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def episode_records(run_id: str, tasks: int = 2) -> list[EpisodeRecord]:
    records = []
    for task in range(tasks):
        pair_id = make_pair_id(run_id, f"task-{task}", 0)
        for order, arm in enumerate(("baseline", "optimizer")):
            records.append(
                EpisodeRecord(
                    episode_id=make_episode_id(pair_id, arm),
                    client="claude",
                    task_id=f"task-{task}",
                    pair_id=pair_id,
                    arm=arm,
                    run_id=run_id,
                    repetition=0,
                    order=order,
                    success=True,
                    total_tokens=1000 + 10 * task + order,
                    price_catalog_version="2025-06-01",
                )
            )
    return records


def write_eval_run(root: Path, run_id: str, *, large_bytes: int = 0) -> Path:
    """An eval run: episodes (jsonl + parquet), effects, report, plot, per-episode files."""
    run_dir = root / "runs" / run_id
    run_dir.mkdir(parents=True)
    records = episode_records(run_id)
    (run_dir / "episodes.jsonl").write_text(
        "".join(r.to_json_line() + "\n" for r in records), encoding="utf-8"
    )
    pl.DataFrame(
        {
            "episodeId": [r.episode_id for r in records],
            "arm": [r.arm for r in records],
            "totalTokens": [r.total_tokens for r in records],
        }
    ).write_parquet(run_dir / "episodes.parquet")
    pl.DataFrame(
        {"cohort": ["claude/task-0", "claude/task-1"], "effect": [-0.1, -0.2]}
    ).write_parquet(run_dir / "effects.parquet")
    (run_dir / "report.md").write_text(f"# Run {run_id}\n\nTwo cohorts.\n", encoding="utf-8")
    report = {"run_id": run_id, "kind": "eval", "cohorts": [{"id": "a"}, {"id": "b"}]}
    (run_dir / "report.json").write_text(json.dumps(report), encoding="utf-8")
    (run_dir / "forest.png").write_bytes(tiny_png())
    for record in records:
        episode_dir = run_dir / "episodes" / record.episode_id
        episode_dir.mkdir(parents=True)
        (episode_dir / "record.json").write_text(record.to_json_line(), encoding="utf-8")
        (episode_dir / "stdout.txt").write_text(f"solved {record.task_id}\n", encoding="utf-8")
    if large_bytes:
        # Incompressible and binary, but with no secret-like text: a stand-in for a big artifact.
        block = bytes(range(256)) * 4096
        data = (block * (large_bytes // len(block) + 1))[:large_bytes]
        (run_dir / "episodes" / "large.bin").write_bytes(data)
    return run_dir


def write_trial_run(root: Path, run_id: str) -> Path:
    run_dir = write_eval_run(root, run_id)
    trials = run_dir / "trials"
    trials.mkdir()
    (trials / "approval.json").write_text(
        json.dumps({"approved": True, "approver": "lead", "budget_acknowledged": True}),
        encoding="utf-8",
    )
    (trials / "verdict.json").write_text(json.dumps({"verdict": "inconclusive"}), encoding="utf-8")
    report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    report["kind"] = "trial"
    (run_dir / "report.json").write_text(json.dumps(report), encoding="utf-8")
    return run_dir


def snapshot(run_dir: Path) -> dict[str, bytes]:
    return {
        p.relative_to(run_dir).as_posix(): p.read_bytes()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file()
    }
