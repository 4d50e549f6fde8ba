"""Subscription effects and verdicts per cohort (issue 16, item 2), on records whose
quota snapshots are written by hand: every number below is known in advance.

The verdict comes from the canary's rule (pairlab.core.verdict.quota); these tests
check that a cohort hands it the right intervals and that nulls stay nulls.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pairlab.core.analysis.cohorts import analyse_cohorts
from pairlab.core.analysis.study_plan import ResolvedPlan, default_plan
from pairlab.core.quota.consumption import ConcurrentUse, interval_consumption
from pairlab.core.quota.intervals import build_interval_record
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.schemas.quota import QuotaObservation
from pairlab.core.subscription import analyse_subscription
from pairlab.core.verdict.artifact import Provider

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RESET = T0 + timedelta(hours=4)
PLAN = ResolvedPlan.of(default_plan(2), "default")
WINDOWS = ("five-hour", "seven-day")


def snap(
    window: str,
    used: float,
    at: float,
    *,
    reset: datetime = RESET,
    precision: float | None = 1.0,
    provider: str = "sim",
) -> QuotaObservation:
    return QuotaObservation(
        provider=provider,
        window=window,
        used_percent=used,
        precision_percent=precision,
        resets_at=reset,
        reset_id=f"{window}@{reset.isoformat()}",
        observed_at=T0 + timedelta(seconds=at),
        source="test",
    )


def episode(
    rep: int,
    arm: str,
    *,
    start_s: float,
    seconds: float,
    used: float,
    five: float,
    seven: float | None = None,
    unrelated: bool | None = False,
    precision: float | None = 1.0,
    end_reset: datetime = RESET,
    correct: bool = True,
    task: str = "t1",
) -> EpisodeRecord:
    """One episode whose five-hour window goes from ``used`` to ``used + five`` points."""
    seven = five if seven is None else seven
    before = [snap(w, used, start_s, precision=precision) for w in WINDOWS]
    after = [
        snap("five-hour", used + five, start_s + seconds, reset=end_reset, precision=precision),
        snap("seven-day", used + seven, start_s + seconds, precision=precision),
    ]
    pair_id = f"run-q:{task}:{rep}"
    return EpisodeRecord(
        episode_id=f"{pair_id}:{arm}",
        pair_id=pair_id,
        run_id="run-q",
        arm=arm,
        client="sim",
        client_version="1.0",
        model="sim-model",
        task_id=task,
        correct=correct,
        total_tokens=1000,
        quota_before=before,
        quota_after=after,
        quota_consumption=interval_consumption(before, after, unrelated),
        unrelated_concurrent_quota_use=unrelated,
    )


def pairs(
    n: int, base_points: float, full_points: float, *, seconds: float = 60.0, **full: Any
) -> list[EpisodeRecord]:
    """n pairs run one after another, each arm in an interval of ``seconds``."""
    out, used, at = [], 10.0, 0.0
    for rep in range(n):
        out.append(
            episode(rep, "baseline", start_s=at, seconds=seconds, used=used, five=base_points)
        )
        used, at = used + base_points, at + seconds
        out.append(
            episode(rep, "full", start_s=at, seconds=seconds, used=used, five=full_points, **full)
        )
        used, at = used + full_points, at + seconds
    return out


def analyse(
    records: list[EpisodeRecord], provider: Provider | None = Provider.CLAUDE, **kw: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    analysis = analyse_cohorts(
        records, run_id="run-q", min_pairs=2, n_resamples=1000, plan=PLAN
    ).to_json()
    section = analyse_subscription(
        records, kw.get("intervals", []), analysis, PLAN.plan, provider=provider, n_resamples=1000
    )
    (cohort,) = section["cohorts"]
    return cohort, section


def effect(cohort: dict[str, Any], window: str) -> dict[str, Any]:
    (found,) = [e for e in cohort["effects"] if e["window"] == window]
    return found


def test_equal_intervals_with_a_reduction_beyond_precision_are_supported() -> None:
    cohort, section = analyse(pairs(4, 5.0, 2.0))
    assert section["unit"] == "episode" and cohort["status"] == "ok" and cohort["pairs"] == 4
    five = effect(cohort, "five-hour")
    assert five["estimate"] == pytest.approx(-3.0) and five["n"] == 4
    assert five["excludedNull"] == 0 and five["excludedByReason"] == {}
    assert five["role"] == "secondary"  # the default plan tests the windows' consumption
    (verdict,) = cohort["verdicts"]
    assert (verdict["treatment"], verdict["control"]) == ("full", "baseline")
    assert verdict["verdict"] == "supported-candidate"
    assert verdict["intervals"]["reduction"] == 8  # 4 pairs x 2 windows
    assert [p["verdict"] for p in verdict["perPair"]] == ["supported-candidate"] * 4


def test_within_precision_is_inconclusive_and_said_to_be_below_precision() -> None:
    cohort, _ = analyse(pairs(4, 1.0, 1.0))
    (verdict,) = cohort["verdicts"]
    assert verdict["verdict"] == "inconclusive"
    assert verdict["reasons"] == {"quota-change-within-uncertainty": 8}
    assert verdict["belowPrecision"] is True
    assert effect(cohort, "five-hour")["belowPrecision"] is True


def test_an_increase_beyond_precision_is_rejected() -> None:
    cohort, _ = analyse(pairs(3, 2.0, 6.0))
    (verdict,) = cohort["verdicts"]
    assert verdict["verdict"] == "rejected"
    assert "subscription-consumption-regression" in verdict["reasons"]


def test_a_null_consumption_is_excluded_with_its_reason_and_never_counts_as_zero() -> None:
    records = pairs(4, 5.0, 2.0)
    # pair 2's full episode crossed a five-hour reset: its five-hour value is null
    crossed = records[5]
    assert (crossed.pair_id, crossed.arm) == ("run-q:t1:2", "full")
    records[5] = episode(
        2,
        "full",
        start_s=300,
        seconds=60,
        used=25.0,
        five=2.0,
        end_reset=RESET + timedelta(hours=5),
    )
    assert records[5].quota_consumption is not None
    assert records[5].quota_consumption[0].reason == "quota-reset-crossing"
    cohort, _ = analyse(records)
    five = effect(cohort, "five-hour")
    assert five["n"] == 3 and five["excludedNull"] == 1
    assert five["excludedByReason"] == {"quota-reset-crossing": 1}
    assert five["estimate"] == pytest.approx(-3.0)  # the mean of the 3 measured pairs, no 0
    seven = effect(cohort, "seven-day")
    assert seven["n"] == 4 and seven["excludedNull"] == 0
    arms = {(a["window"], a["arm"]): a for a in cohort["arms"]}
    assert arms[("five-hour", "full")]["excludedByReason"] == {"quota-reset-crossing": 1}
    assert arms[("five-hour", "full")]["usable"] == 3
    (verdict,) = cohort["verdicts"]
    assert verdict["verdict"] == "inconclusive"
    assert verdict["reasons"] == {"quota-reset-crossing": 1}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"unrelated": True}, "unrelated-concurrent-quota-use"),
        ({"unrelated": None}, "unrelated-concurrent-quota-use"),  # not established
        ({"precision": None}, "unknown-quota-precision"),
        ({"seconds": 61.0}, "quota-interval-mismatch"),
    ],
)
def test_the_canary_reason_codes_make_it_inconclusive(change: dict[str, Any], reason: str) -> None:
    records = pairs(3, 5.0, 2.0)
    rep = 1
    i = next(k for k, r in enumerate(records) if r.pair_id.endswith(f":{rep}") and r.arm == "full")
    old = records[i]
    start = (old.quota_before or [])[0].observed_at - T0
    kwargs = {"start_s": start.total_seconds(), "seconds": 60.0, "used": 15.0, "five": 2.0}
    records[i] = episode(rep, "full", **{**kwargs, **change})
    cohort, _ = analyse(records)
    (verdict,) = cohort["verdicts"]
    assert verdict["verdict"] == "inconclusive", verdict
    assert set(verdict["reasons"]) == {reason}
    bad = [p for p in verdict["perPair"] if p["pairId"] == f"run-q:t1:{rep}"]
    assert bad[0]["reasons"] == [reason]
    # the effect leaves out what is null, and only that
    five = effect(cohort, "five-hour")
    if reason == "quota-interval-mismatch":
        assert five["n"] == 3  # unequal lengths are still measured consumption
    else:
        assert five["n"] == 2 and five["excludedByReason"] == {reason: 1}


def test_no_provider_loom_can_name_is_inconclusive_missing_telemetry() -> None:
    cohort, section = analyse(pairs(3, 5.0, 2.0), provider=None)
    (verdict,) = cohort["verdicts"]
    assert section["provider"] is None
    assert verdict["verdict"] == "inconclusive"
    assert verdict["reasons"] == {"missing-quota-telemetry": 1}


def test_quota_aware_intervals_are_the_units_and_pair_by_quota_pair() -> None:
    """Two blocks of 2 repetitions: the cohort compares the arms' intervals, not episodes."""
    records, intervals = [], []
    used, at = 10.0, 0.0
    for block in range(2):
        for arm, points in (("baseline", 6.0), ("full", 3.0)):
            ids = [f"run-q:t1:{2 * block + k}:{arm}" for k in range(2)]
            start = [snap(w, used, at) for w in WINDOWS]
            for k in range(2):  # per-episode deltas below precision: 1.5 points each
                records.append(
                    episode(2 * block + k, arm, start_s=at + 5 * k, seconds=4, used=used, five=1.0)
                )
            used += points
            end = [snap(w, used, at + 30) for w in WINDOWS]
            intervals.append(
                build_interval_record(
                    interval_id=f"run-q:t1:q{block}:{arm}",
                    run_id="run-q",
                    task_id="t1",
                    arm=arm,
                    order=0 if arm == "baseline" else 1,
                    episode_ids=ids,
                    ran_episode_ids=ids,
                    scheduled_s=30.0,
                    started_at=T0 + timedelta(seconds=at),
                    ended_at=T0 + timedelta(seconds=at + 30),
                    overrun=False,
                    quota_start=start,
                    quota_end=end,
                    concurrent_use=ConcurrentUse(unrelated=False, basis="simulator-charge-log"),
                )
            )
            at += 30
    cohort, section = analyse(records, intervals=intervals)
    assert section["unit"] == "interval" and cohort["units"] == 4
    assert cohort["pairs"] == 2
    assert effect(cohort, "five-hour")["estimate"] == pytest.approx(-3.0)
    (verdict,) = cohort["verdicts"]
    assert verdict["verdict"] == "supported-candidate"
    assert [p["pairId"] for p in verdict["perPair"]] == ["run-q:t1:q0", "run-q:t1:q1"]
