"""Checks on a finished evidence-eval run, shared by the end-to-end tests.

Each function reads the real files a run left behind (staging dir, store, the
simulator's truth files) and asserts one property of DESIGN 2/11/12.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

import polars as pl

from pairlab.core.schemas.episode import EpisodeRecord

REPORT_FILES = (
    "report.md",
    "report.json",
    "report.html",
    "run.json",
    "episodes.jsonl",
    "episodes.parquet",
    "effects.parquet",
    "forest.png",
    "manifest.json",
)

# record field (JSON alias) -> simulator truth vector key
TRUTH_FIELDS = {
    "uncachedInputTokens": "uncached_input",
    "cachedInputTokens": "cache_read",
    "cacheWrite5mTokens": "cache_write_5m",
    "cacheWrite1hTokens": "cache_write_1h",
    "cacheWriteTokens": "cache_write_generic",
    "outputTokens": "output",
    "reasoningTokens": "reasoning",
}


def run_path(work_dir: Path, run_id: str) -> Path:
    return work_dir / "runs" / run_id


def schedule_entries(work_dir: Path, run_id: str) -> list[dict[str, Any]]:
    data = json.loads((run_path(work_dir, run_id) / "schedule.json").read_text())
    entries: list[dict[str, Any]] = data["entries"]
    return entries


def episode_dirs(work_dir: Path, run_id: str) -> dict[str, Path]:
    """Episode id -> episode dir, for every episode that has a record."""
    out = {}
    for rec in sorted((run_path(work_dir, run_id) / "episodes").glob("*/record.json")):
        record = EpisodeRecord.model_validate_json(rec.read_bytes())
        out[record.episode_id] = rec.parent
    return out


def load_records(work_dir: Path, run_id: str) -> dict[str, EpisodeRecord]:
    return {
        eid: EpisodeRecord.model_validate_json((d / "record.json").read_bytes())
        for eid, d in episode_dirs(work_dir, run_id).items()
    }


def truth_of(episode_dir: Path) -> dict[str, Any]:
    found = sorted(episode_dir.glob("collected/**/simclient-truth.json"))
    assert len(found) == 1, f"expected one simulator truth file under {episode_dir}: {found}"
    truth: dict[str, Any] = json.loads(found[0].read_text())
    return truth


def check_records(
    work_dir: Path,
    run_id: str,
    *,
    tasks: list[str],
    repetitions: int,
    arms: list[str],
    backend: str,
) -> dict[str, EpisodeRecord]:
    """One schema-v2 record per planned episode, ids ``<run>:<task>:<rep>:<arm>``."""
    entries = schedule_entries(work_dir, run_id)
    expected = {f"{run_id}:{t}:{r}:{a}" for t in tasks for r in range(repetitions) for a in arms}
    assert {e["episode_id"] for e in entries} == expected
    records = load_records(work_dir, run_id)
    assert set(records) == expected
    for eid, rec in records.items():
        dumped = rec.model_dump(mode="json", by_alias=True)
        assert dumped["schemaVersion"] == 2
        assert eid == f"{rec.run_id}:{rec.task_id}:{rec.repetition}:{rec.arm}"
        assert rec.pair_id == f"{rec.run_id}:{rec.task_id}:{rec.repetition}"
        assert rec.backend == backend
        assert rec.client == "sim"
        assert rec.started_at is not None and rec.ended_at is not None
    return records


def check_pair_order(work_dir: Path, run_id: str, records: dict[str, EpisodeRecord]) -> None:
    """Arms of a pair start in planned order and never overlap in time."""
    pairs: dict[str, list[dict[str, Any]]] = {}
    for entry in schedule_entries(work_dir, run_id):
        pairs.setdefault(entry["pair_id"], []).append(entry)
    for pair_id, entries in pairs.items():
        ordered = sorted(entries, key=lambda e: e["order"])
        assert [e["order"] for e in ordered] == list(range(len(ordered))), pair_id
        recs = [records[e["episode_id"]] for e in ordered]
        assert [r.order for r in recs] == [e["order"] for e in ordered]
        for earlier, later in itertools.pairwise(recs):
            assert earlier.ended_at is not None and later.started_at is not None
            assert earlier.ended_at <= later.started_at, (
                f"{pair_id}: {earlier.arm} (order {earlier.order}) ended {earlier.ended_at} after "
                f"{later.arm} (order {later.order}) started {later.started_at}"
            )


def pair_spans(records: dict[str, EpisodeRecord]) -> list[tuple[Any, Any]]:
    spans: dict[str, list[Any]] = {}
    for rec in records.values():
        lo, hi = spans.setdefault(rec.pair_id, [rec.started_at, rec.ended_at])
        spans[rec.pair_id] = [min(lo, rec.started_at), max(hi, rec.ended_at)]
    return [(lo, hi) for lo, hi in spans.values()]


def some_pairs_overlap(records: dict[str, EpisodeRecord]) -> bool:
    spans = sorted(pair_spans(records))
    return any(b[0] < a[1] for a, b in itertools.pairwise(spans))


def _observations(rec: EpisodeRecord, which: str) -> list[dict[str, Any]]:
    dumped = rec.model_dump(mode="json", by_alias=True)
    obs: list[dict[str, Any]] = dumped[which] or []
    return obs


def check_quota(records: dict[str, EpisodeRecord]) -> None:
    """quotaBefore/After present from the sim provider; used_percent never falls within one reset."""
    by_pair: dict[str, list[EpisodeRecord]] = {}
    for rec in records.values():
        before, after = _observations(rec, "quotaBefore"), _observations(rec, "quotaAfter")
        assert before and after, f"{rec.episode_id}: quota snapshots missing"
        for obs in before + after:
            assert obs["provider"] == "sim"
        for obs in after:
            assert obs["used_percent"] is not None and obs["reset_id"], rec.episode_id
        for obs in before:
            # Unknown only before the account's first use (no quota file yet): null, never 0.
            if obs["used_percent"] is None:
                assert rec.order == 0 and obs["reset_id"] is None, rec.episode_id
                assert "unavailable" in obs["source"], obs
        windows_before = {o["window"]: o for o in before}
        for o in after:
            b = windows_before[o["window"]]
            if b["used_percent"] is not None and b["reset_id"] == o["reset_id"]:
                assert o["used_percent"] >= b["used_percent"], rec.episode_id
        by_pair.setdefault(rec.pair_id, []).append(rec)
    # Within a pair the snapshots are taken one after another: a monotone chain per window.
    for pair in by_pair.values():
        last: dict[tuple[str, str], float] = {}
        for rec in sorted(pair, key=lambda r: r.order):
            for obs in _observations(rec, "quotaBefore") + _observations(rec, "quotaAfter"):
                if obs["used_percent"] is None:
                    continue
                key = (obs["window"], obs["reset_id"])
                assert obs["used_percent"] >= last.get(key, 0.0), (rec.episode_id, key)
                last[key] = obs["used_percent"]


def check_usage_matches_truth(
    work_dir: Path, run_id: str, records: dict[str, EpisodeRecord]
) -> None:
    """The usage recorded is exactly what the simulator drew (its truth file)."""
    dirs = episode_dirs(work_dir, run_id)
    for eid, rec in records.items():
        truth = truth_of(dirs[eid])
        assert truth["episode_id"] == eid
        assert truth["arm"] == rec.arm
        dumped = rec.model_dump(mode="json", by_alias=True)
        for field, key in TRUTH_FIELDS.items():
            assert dumped[field] == truth["vector"][key], (eid, field)
        drawn = [v for v in truth["vector"].values() if v is not None]
        assert rec.total_tokens == sum(drawn), eid
        assert rec.api_calls == truth["api_calls"], eid
        assert rec.model == truth["model"], eid
        # Every grader (workspace commands and final-answer checks) passes exactly when
        # the simulator solved the task.
        command_checks = [c.passed for c in rec.grader_checks or [] if c.kind == "command"]
        assert command_checks and all(command_checks) is truth["solved"], eid
        assert rec.correct is truth["solved"], eid
        assert rec.session_id == truth["session_id"], eid


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_store(store: Path, run_id: str, planned: list[str]) -> dict[str, Any]:
    """The report files are in the store, hashes match the manifest, manifest written last."""
    base = store / "runs" / run_id
    for name in REPORT_FILES:
        assert (base / name).is_file(), f"{name} missing from the store"
    manifest = json.loads((base / "manifest.json").read_text())
    keys = {o["key"]: o for o in manifest["objects"]}
    for name in REPORT_FILES[:-1]:
        assert name in keys, f"{name} not in the manifest"
    for key, obj in keys.items():
        assert _sha256(base / key) == obj["sha256"], key
    manifest_mtime = (base / "manifest.json").stat().st_mtime_ns
    assert all((base / k).stat().st_mtime_ns <= manifest_mtime for k in keys)

    lines = (base / "episodes.jsonl").read_text().splitlines()
    ids = [json.loads(line)["episodeId"] for line in lines]
    assert ids == planned, "episodes.jsonl must hold each planned episode once, in plan order"
    assert pl.read_parquet(base / "episodes.parquet").height == len(planned)
    effects = pl.read_parquet(base / "effects.parquet")
    assert effects.height > 0
    assert (base / "forest.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads((base / "report.json").read_text())
    assert report["meta"]["run_id"] == run_id
    assert report["meta"]["episodes"] == len(planned)
    statuses = {c["status"] for c in report["analysis"]["cohorts"]}
    assert statuses == {"ok"}, f"every cohort should pass the min-pairs gate: {statuses}"
    assert run_id in (base / "report.md").read_text()
    # the answer first: the headline, in the JSON and at the top of report.md
    assert report["headline"]["groups"], "the report opens with the headline"
    markdown = (base / "report.md").read_text()
    assert markdown.index("## Answer") < markdown.index("## Cohorts")
    return report
