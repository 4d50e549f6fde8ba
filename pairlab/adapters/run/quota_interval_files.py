"""Quota-interval records on disk (issue 16): one file per interval while a run goes
(``quota-intervals/<id>.json``, written atomically, so a resumed run knows which
intervals are measured) and ``quota-intervals.jsonl`` in plan order when it ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pairlab.adapters.run.directory import RunDir, safe_name, write_atomic
from pairlab.core.quota.intervals import INTERVALS_DIR, INTERVALS_FILE, QuotaIntervalRecord


def interval_path(run_dir: RunDir, interval_id: str) -> Path:
    return run_dir.path / INTERVALS_DIR / f"{safe_name(interval_id)}.json"


def load_interval(run_dir: RunDir, interval_id: str) -> QuotaIntervalRecord | None:
    """The interval's persisted record, or None when it has none (yet)."""
    path = interval_path(run_dir, interval_id)
    if not path.exists():
        return None
    return QuotaIntervalRecord.model_validate_json(path.read_bytes())


def save_interval(run_dir: RunDir, record: QuotaIntervalRecord) -> Path:
    path = interval_path(run_dir, record.interval_id)
    write_atomic(path, record.to_json_line().encode("utf-8") + b"\n")
    return path


def write_intervals_jsonl(run_dir: RunDir, interval_ids: Sequence[str]) -> Path:
    """``quota-intervals.jsonl``: every recorded interval of ``interval_ids``, in order."""
    found = [load_interval(run_dir, interval_id) for interval_id in interval_ids]
    body = "".join(r.to_json_line() + "\n" for r in found if r is not None)
    path = run_dir.path / INTERVALS_FILE
    write_atomic(path, body.encode("utf-8"))
    return path


def read_intervals_jsonl(run_path: Path) -> list[QuotaIntervalRecord]:
    """The intervals of a finished (or pulled) run; empty when it had none."""
    path = run_path / INTERVALS_FILE
    if not path.exists():
        return []
    return [
        QuotaIntervalRecord.model_validate_json(line)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
