"""Quota-aware evidence plans (issue 16, item 3): blocks of repetitions, one scheduled
interval per arm and block, arm-major; `pairlab plan` shows them; interval records."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from pairlab.cli import app
from pairlab.core.errors import InvalidInputError
from pairlab.core.quota.consumption import ConcurrentUse
from pairlab.core.quota.intervals import build_interval_record, intervals_frame, quota_pair_id
from pairlab.core.schedule import QuotaIntervalPlan, plan_schedule, williams_rows
from pairlab.core.schemas.episode import ARMS
from pairlab.core.schemas.quota import QuotaObservation

TASKS = ["fix-median", "refactor-rename-total"]


@given(
    repetitions=st.integers(min_value=1, max_value=13),
    k=st.integers(min_value=1, max_value=5),
    n_arms=st.integers(min_value=2, max_value=4),
)
def test_blocks_group_each_arms_repetitions_into_one_back_to_back_interval(
    repetitions: int, k: int, n_arms: int
) -> None:
    arms = list(ARMS[:n_arms])
    quota = QuotaIntervalPlan(episodes_per_interval=k, interval_s=30)
    schedule = plan_schedule(TASKS, arms, repetitions, seed=5, run_id="r", quota_intervals=quota)
    assert len(schedule.entries) == len(TASKS) * repetitions * n_arms
    # the token pairs are unchanged: every (task, repetition) has every arm once
    for pair in schedule.pairs():
        assert sorted(e.arm for e in pair) == sorted(arms)
    blocks = -(-repetitions // k)
    intervals = schedule.intervals()
    assert len(intervals) == len(TASKS) * blocks * n_arms
    position = {id(e): i for i, e in enumerate(schedule.entries)}
    for interval in intervals:
        assert len({(e.task_id, e.arm, e.order) for e in interval}) == 1
        assert 1 <= len(interval) <= k
        spots = [position[id(e)] for e in interval]
        assert spots == list(range(spots[0], spots[0] + len(spots)))  # back to back
    rows = {tuple(r) for r in williams_rows(n_arms)}
    for unit in schedule.units():
        assert len({quota_pair_id(e.quota_interval or "") for e in unit}) == 1
        order = [arms.index(e.arm) for e in unit]
        row = tuple(dict.fromkeys(order))  # arm-major: one Williams row per block
        assert row in rows
        sizes = Counter(e.arm for e in unit)
        assert len(set(sizes.values())) == 1  # equal work in each arm's interval


def test_without_the_option_the_schedule_is_the_plain_williams_one() -> None:
    plain = plan_schedule(TASKS, ARMS, 6, seed=2, run_id="r")
    assert plain.quota_intervals is None and plain.units() == plain.pairs()
    assert all(e.quota_interval is None for e in plain.entries)
    assert "quotaIntervals" not in plain.to_json()


def test_interval_plan_is_seeded_and_shown_in_plan_json() -> None:
    quota = QuotaIntervalPlan(episodes_per_interval=2, interval_s=45)
    a = plan_schedule(TASKS, ARMS, 4, seed=9, run_id="r", quota_intervals=quota)
    b = plan_schedule(TASKS, ARMS, 4, seed=9, run_id="r", quota_intervals=quota)
    assert a == b
    result = CliRunner().invoke(
        app,
        [
            "plan",
            "--suite",
            "core",
            "--repetitions",
            "4",
            "--seed",
            "9",
            "--run-id",
            "r",
            "--arms",
            "baseline,full",
            "--quota-interval-episodes",
            "2",
            "--quota-interval-s",
            "45",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["quotaIntervals"] == {"episodesPerInterval": 2, "intervalS": 45.0}
    first = payload["episodes"][0]
    assert list(first)[-1] == "quotaInterval"
    assert first["quotaInterval"] == f"r:{first['taskId']}:q0:{first['arm']}"
    table = CliRunner().invoke(
        app,
        [
            "plan",
            "--suite",
            "core",
            "--repetitions",
            "2",
            "--seed",
            "1",
            "--quota-interval-episodes",
            "2",
        ],
    )
    assert table.exit_code == 0 and "quota intervals: 2 episode(s) per arm" in table.stdout
    bad = CliRunner().invoke(
        app,
        [
            "plan",
            "--suite",
            "core",
            "--repetitions",
            "2",
            "--seed",
            "1",
            "--quota-interval-episodes",
            "2",
            "--quota-interval-s",
            "0",
        ],
    )
    assert isinstance(bad.exception, InvalidInputError)


T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


def _obs(used: float, minutes: float) -> QuotaObservation:
    return QuotaObservation(
        provider="sim",
        window="five-hour",
        used_percent=used,
        precision_percent=1.0,
        resets_at=T0 + timedelta(hours=4),
        reset_id="five-hour-1",
        observed_at=T0 + timedelta(minutes=minutes),
        source="sim:quota.json",
    )


@pytest.mark.parametrize("resumed", [False, True])
def test_interval_record_measures_only_a_complete_interval(resumed: bool) -> None:
    ids = ["r:t:0:full", "r:t:1:full"]
    record = build_interval_record(
        interval_id="r:t:q0:full",
        run_id="r",
        task_id="t",
        arm="full",
        order=1,
        episode_ids=ids,
        ran_episode_ids=ids[1:] if resumed else ids,
        scheduled_s=60,
        started_at=T0,
        ended_at=T0 + timedelta(minutes=1),
        overrun=False,
        quota_start=[_obs(10, 0)],
        quota_end=[_obs(14, 1)],
        concurrent_use=ConcurrentUse(False, "simulator-charge-log"),
    )
    assert record.quota_pair_id == "r:t:q0" and record.complete is not resumed
    (c,) = record.quota_consumption or []
    if resumed:  # less work than its peers: never a smaller number
        assert c.consumption_percent is None and c.reason == "quota-interval-mismatch"
    else:
        assert c.consumption_percent == 4.0 and c.precision_percent == 1.0
    frame = intervals_frame([record], {})
    row = frame.row(0, named=True)
    assert row["quotaFiveHourConsumptionPct"] == (None if resumed else 4.0)
    assert row["quotaSevenDayNullReason"] == "missing-quota-window"
    assert row["durationS"] == 60.0 and row["client"] is None
    again = type(record).model_validate_json(record.to_json_line())
    assert again == record
