"""Subscription quota evidence through real simulated evals (issue 16, items 1-3, 5).

The evidence-eval flow runs the simulated client on the local backend through the
real Prefect engine; every assertion is checked against the simulator's ground
truth (its per-episode truth file and its account charge log), never against
pairlab's own computation:

* per-episode consumption = the simulator's after - before used percent when no one
  else touched the account, null with the right reason otherwise;
* concurrent pairs on one account: concurrent use is established from what really
  overlapped (process run times), and such episodes' consumption is null;
* a reset forced mid-episode, and unknown precision, give null with their reasons;
* the quota-aware schedule: equal back-to-back intervals per arm whose consumption
  equals the simulator's, with a planted reduction visible in the charges;
* and nowhere (record, cohort frame, episodes.parquet) does a null become 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from flows.evidence_eval import evidence_eval
from flows.params import EvidenceEvalParams
from pairlab.adapters.run.quota_interval_files import read_intervals_jsonl
from pairlab.adapters.run.trial_inputs import open_sim_account
from pairlab.core.analysis.cohorts import episodes_frame
from pairlab.core.quota.consumption import ACCOUNT_WINDOW_COLUMNS
from pairlab.core.schemas.episode import EpisodeRecord
from tests.e2e import eval_checks as checks

pytestmark = [pytest.mark.prefect, pytest.mark.e2e]
BUDGETS = {"five-hour": 300_000, "seven-day": 30_000_000}
WINDOWS = ("five-hour", "seven-day")


def _sim_config(monkeypatch: pytest.MonkeyPatch, config: dict[str, Any]) -> None:
    quota = {"five_hour_budget_tokens": BUDGETS["five-hour"]}
    quota |= {"seven_day_budget_tokens": BUDGETS["seven-day"]}
    merged = {**config, "quota": {**quota, **config.get("quota", {})}}
    monkeypatch.setenv("PAIRLAB_SIM_EFFECTS", json.dumps(merged))


def _run(tmp_path: Path, run_id: str, *, open_account: bool = True, **overrides: Any) -> Path:
    work = tmp_path / "work"
    if open_account:  # the account exists before the first episode, as a real one does
        open_sim_account(work / "sim-account", BUDGETS)
    params = EvidenceEvalParams(
        run_id=run_id,
        min_pairs=2,
        seed=7,
        store=str(tmp_path / "store"),
        work_dir=str(work),
        **overrides,
    )
    state = evidence_eval(params, return_state=True)
    assert state.is_completed(), state
    return work


def _consumption(record: EpisodeRecord) -> dict[str, tuple[float | None, str | None]]:
    return {
        c.window: (c.consumption_percent, c.reason)
        for c in record.quota_consumption or []
        if c.provider == "sim"
    }


def _truth_delta(truth: dict[str, Any], window: str) -> float:
    before = truth["quota"]["before"]["windows"][window]
    after = truth["quota"]["after"]["windows"][window]
    assert before["reset_id"] == after["reset_id"], "a reset: no delta in the truth either"
    return float(after["used_percent"] - before["used_percent"])


def _check_frames_keep_nulls(work: Path, run_id: str, records: dict[str, EpisodeRecord]) -> None:
    """The record's nulls stay null in the cohort frame and in episodes.parquet."""
    ordered = sorted(records.values(), key=lambda r: r.episode_id)
    frame = episodes_frame(ordered)
    table = pl.read_parquet(work / "runs" / run_id / "episodes.parquet")
    by_id = {row["episodeId"]: row for row in table.to_dicts()}
    for row, record in zip(frame.to_dicts(), ordered, strict=True):
        stored = _consumption(record)
        for window, (value_col, reason_col, _) in ACCOUNT_WINDOW_COLUMNS.items():
            value, reason = stored[window]
            assert row[value_col] == value, (record.episode_id, window)
            assert row[reason_col] == reason, (record.episode_id, window)
            assert by_id[record.episode_id][value_col] == value
            assert by_id[record.episode_id][reason_col] == reason
            if value is None:
                assert reason is not None and row[value_col] is None  # never a stand-in 0


def test_concurrent_pairs_on_one_account_are_assessed_not_assumed(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _sim_config(monkeypatch, {})
    run_id = "q-concurrent"
    work = _run(
        tmp_path,
        run_id,
        task_filter=["fix-median", "answer-cache-env"],
        repetitions=2,
        arms=["baseline", "full"],
        concurrency=2,
        backend="local",
    )
    records = checks.load_records(work, run_id)
    dirs = checks.episode_dirs(work, run_id)
    assert len(records) == 8
    flagged = {"alone": 0, "concurrent": 0}
    for eid, rec in records.items():
        assert rec.concurrent_use_basis == "simulator-charge-log"
        assert rec.quota_before and rec.quota_after
        start = min(o.observed_at for o in rec.quota_before)
        end = max(o.observed_at for o in rec.quota_after)
        others = [o for o in records.values() if o.episode_id != eid]
        assert all(o.started_at and o.ended_at for o in others)
        # Ground truth from what really ran when: another episode's whole process run
        # inside this interval charged the account inside it; one entirely outside
        # could not have.
        inside = [o for o in others if start <= o.started_at and o.ended_at <= end]  # type: ignore[operator]
        outside = all(o.ended_at < start or o.started_at > end for o in others)  # type: ignore[operator]
        if inside:
            assert rec.unrelated_concurrent_quota_use is True, eid
        if outside:
            assert rec.unrelated_concurrent_quota_use is False, eid
        truth = checks.truth_of(dirs[eid])
        got = _consumption(rec)
        if rec.unrelated_concurrent_quota_use is False:
            flagged["alone"] += 1
            for window in WINDOWS:
                assert got[window] == (_truth_delta(truth, window), None), (eid, window)
        else:
            flagged["concurrent"] += 1
            assert got["five-hour"] == (None, "unrelated-concurrent-quota-use"), eid
            assert got["seven-day"] == (None, "unrelated-concurrent-quota-use"), eid
    # two pairs really ran at once, and each pair's arms one after another
    assert checks.some_pairs_overlap(records)
    assert flagged["concurrent"] >= 1, flagged
    _check_frames_keep_nulls(work, run_id, records)


def test_reset_crossing_and_unknown_precision_give_null_with_their_reasons(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _sim_config(
        monkeypatch,
        {"quota": {"mid_episode_reset": {"p": 0.5, "windows": ["five-hour"]}}},
    )
    run_id = "q-reset"
    work = _run(
        tmp_path,
        run_id,
        task_filter=["fix-median"],
        repetitions=4,
        arms=["baseline", "full"],
        backend="local",
    )
    records = checks.load_records(work, run_id)
    dirs = checks.episode_dirs(work, run_id)
    crossed = 0
    for eid, rec in records.items():
        truth = checks.truth_of(dirs[eid])
        got = _consumption(rec)
        assert rec.unrelated_concurrent_quota_use is False, eid  # one pair at a time
        if truth["quota"]["charge"]["reset_windows"] == ["five-hour"]:
            crossed += 1
            assert got["five-hour"] == (None, "quota-reset-crossing"), eid
        else:
            assert got["five-hour"] == (_truth_delta(truth, "five-hour"), None), eid
        assert got["seven-day"] == (_truth_delta(truth, "seven-day"), None), eid
    assert 0 < crossed < len(records)  # both kinds were exercised
    _check_frames_keep_nulls(work, run_id, records)

    # The same account, now reporting no precision: nothing can be claimed.
    _sim_config(monkeypatch, {"quota": {"report_precision": False}})
    run_id = "q-precision"
    work = _run(
        tmp_path,
        run_id,
        open_account=False,
        task_filter=["fix-median"],
        repetitions=2,
        arms=["baseline", "full"],
        backend="local",
    )
    records = checks.load_records(work, run_id)
    for eid, rec in records.items():
        assert all(o.precision_percent is None for o in rec.quota_after or []), eid
        assert _consumption(rec) == {w: (None, "unknown-quota-precision") for w in WINDOWS}, eid
    _check_frames_keep_nulls(work, run_id, records)


def test_quota_aware_schedule_measures_each_arm_over_equal_intervals(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A planted reduction: the full arm charges half of its billed tokens to the account.
    _sim_config(monkeypatch, {"arms": {"full": {"quota_factor": 0.5}}})
    run_id = "q-intervals"
    interval_s = 10.0
    work = _run(
        tmp_path,
        run_id,
        task_filter=["fix-median"],
        repetitions=4,
        arms=["baseline", "full"],
        backend="local",
        quota_interval_episodes=2,
        quota_interval_s=interval_s,
    )
    records = checks.load_records(work, run_id)
    dirs = checks.episode_dirs(work, run_id)
    truths = {eid: checks.truth_of(d) for eid, d in dirs.items()}
    intervals = read_intervals_jsonl(work / "runs" / run_id)
    schedule = json.loads((work / "runs" / run_id / "schedule.json").read_text())
    assert schedule["quota_intervals"] == {"episodes_per_interval": 2, "interval_s": interval_s}
    assert [i.interval_id for i in intervals] == [
        f"{run_id}:fix-median:q{b}:{arm}" for b in (0, 1) for arm in _block_order(schedule, b)
    ]
    for interval in intervals:
        assert interval.complete and len(interval.episode_ids) == 2
        assert interval.unrelated_concurrent_quota_use is False
        assert all(
            records[e].quota_interval_id == interval.interval_id for e in interval.episode_ids
        )
        assert interval.started_at and interval.ended_at
        duration = (interval.ended_at - interval.started_at).total_seconds()
        if not interval.overrun:  # scheduled to the same length (the canary's tolerance)
            assert abs(duration - interval_s) <= max(1.0, 0.01 * interval_s), duration
        first, last = (truths[e] for e in (interval.episode_ids[0], interval.episode_ids[-1]))
        got = {c.window: c for c in interval.quota_consumption or []}
        for window in WINDOWS:
            start = first["quota"]["before"]["windows"][window]
            end = last["quota"]["after"]["windows"][window]
            assert start["reset_id"] == end["reset_id"]
            expected = float(end["used_percent"] - start["used_percent"])
            assert got[window].consumption_percent == expected, (interval.interval_id, window)
            assert got[window].precision_percent == 1.0
    # the planted reduction is in the simulator's charges: half of the billed tokens
    for eid, truth in truths.items():
        factor = truth["quota"]["charge"]["quota_factor"]
        assert factor == (0.5 if records[eid].arm == "full" else 1.0)
    five = {i.arm: [] for i in intervals}
    for interval in intervals:
        (c,) = [c for c in interval.quota_consumption or [] if c.window == "five-hour"]
        five[interval.arm].append(c.consumption_percent)
    # ~13 points per baseline interval against ~7 for full: well beyond whole-percent precision
    assert sum(five["full"]) < sum(five["baseline"])
    # the per-episode records are still measured (whole-percent deltas) and never 0-for-null
    _check_frames_keep_nulls(work, run_id, records)

    # Resume after a crash inside the last interval: its first episode was recorded, the
    # interval was not. The rerun runs only the rest, inside a new interval that holds
    # less work than its peers: null (quota-interval-mismatch), never a smaller number.
    last = intervals[-1]
    run_path = work / "runs" / run_id
    (run_path / "quota-intervals" / f"{last.interval_id}.json").unlink()
    redo = last.episode_ids[1]
    (dirs[redo] / "record.json").unlink()
    kept = {i.interval_id: i for i in intervals[:-1]}
    _run(
        tmp_path,
        run_id,
        open_account=False,
        task_filter=["fix-median"],
        repetitions=4,
        arms=["baseline", "full"],
        backend="local",
        quota_interval_episodes=2,
        quota_interval_s=interval_s,
    )
    again = {i.interval_id: i for i in read_intervals_jsonl(run_path)}
    assert {k: again[k] for k in kept} == kept  # measured intervals are not re-run
    resumed = again[last.interval_id]
    assert resumed.ran_episode_ids == [redo] and resumed.complete is False
    assert {
        c.window: (c.consumption_percent, c.reason) for c in resumed.quota_consumption or []
    } == {w: (None, "quota-interval-mismatch") for w in WINDOWS}
    assert len(checks.load_records(work, run_id)) == len(records)  # no duplicate episode


def _block_order(schedule: dict[str, Any], block: int) -> list[str]:
    seen: list[str] = []
    for entry in schedule["entries"]:
        interval = entry["quota_interval"] or ""
        if interval.split(":")[-2] == f"q{block}" and entry["arm"] not in seen:
            seen.append(entry["arm"])
    return seen
