"""The working directory of one eval run: ``<root>/runs/<run_id>/``.

Completed episodes are persisted by episode id as
``episodes/<episode_id>/record.json`` (written atomically), which makes a
re-run or resumed run skip them and never write a duplicate record. The run's
``episodes.jsonl`` is regenerated from those files in plan order, so a crash
between an append and its bookkeeping can never duplicate a line.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from pairlab.core.schemas.episode import EpisodeRecord

RECORD_FILE = "record.json"


def safe_name(episode_id: str) -> str:
    """Directory name for an episode id (ids contain ':'; keep them readable)."""
    return episode_id.replace("/", "_")


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; outputs are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class RunDir:
    def __init__(self, work_root: Path, run_id: str) -> None:
        self.run_id = run_id
        self.path = work_root / "runs" / run_id
        self.episodes_dir = self.path / "episodes"

    def ensure(self) -> RunDir:
        self.episodes_dir.mkdir(parents=True, exist_ok=True)
        return self

    def episode_dir(self, episode_id: str) -> Path:
        return self.episodes_dir / safe_name(episode_id)

    def completed(self) -> dict[str, EpisodeRecord]:
        out: dict[str, EpisodeRecord] = {}
        if not self.episodes_dir.is_dir():
            return out
        for rec_path in self.episodes_dir.glob(f"*/{RECORD_FILE}"):
            record = EpisodeRecord.model_validate_json(rec_path.read_bytes())
            out[record.episode_id] = record
        return out

    def load_record(self, episode_id: str) -> EpisodeRecord | None:
        """The episode's persisted record, or None when it has none (yet)."""
        path = self.episode_dir(episode_id) / RECORD_FILE
        if not path.exists():
            return None
        return EpisodeRecord.model_validate_json(path.read_bytes())

    def save_record(self, record: EpisodeRecord) -> Path:
        path = self.episode_dir(record.episode_id) / RECORD_FILE
        write_atomic(path, record.to_json_line().encode("utf-8") + b"\n")
        return path

    def write_json(self, name: str, payload: object) -> Path:
        path = self.path / name
        write_atomic(path, json.dumps(payload, indent=2, default=str).encode("utf-8") + b"\n")
        return path

    def write_text(self, name: str, text: str) -> Path:
        path = self.path / name
        write_atomic(path, text.encode("utf-8"))
        return path

    def write_episodes_jsonl(self, records: Iterable[EpisodeRecord], order: Sequence[str]) -> Path:
        """Episodes JSONL in plan order (records not in the plan go last, sorted)."""
        by_id = {r.episode_id: r for r in records}
        rank = {eid: i for i, eid in enumerate(order)}
        ids = sorted(by_id, key=lambda e: (rank.get(e, len(rank)), e))
        body = "".join(by_id[e].to_json_line() + "\n" for e in ids)
        path = self.path / "episodes.jsonl"
        write_atomic(path, body.encode("utf-8"))
        return path
