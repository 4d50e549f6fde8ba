"""The ceiling in percent of a subscription window (pairlab/core/budget_window.py): whole-
percent readings counted at their upper bound, the probe pair, stop/wait/start, window
resets, unread windows, both ceilings together, and what run.json and the report say."""

from __future__ import annotations

from datetime import UTC, datetime

from pairlab.core.admission import stricter
from pairlab.core.budget import BudgetStatus, budget_fact, budget_stop_words
from pairlab.core.budget_window import (
    WindowBudgetStatus,
    account_windows,
    advance_windows,
    decide_window_unit,
    episode_window_use,
    start_windows,
)
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.schemas.quota import QuotaObservation

AT = datetime(2026, 12, 5, 3, 0, tzinfo=UTC)
RESET_A, RESET_B = "2026-12-05T05:00:00+00:00", "2026-12-05T10:00:00+00:00"


def _obs(used: float | None, reset: str | None = RESET_A, window: str = "five-hour",
         provider: str = "claude") -> QuotaObservation:  # fmt: skip
    return QuotaObservation(
        provider=provider, window=window, used_percent=used, precision_percent=1.0,
        reset_id=reset, observed_at=AT, source="claude-oauth-usage",
    )  # fmt: skip


def _record(n: int, before: float | None, after: float | None, reset_after: str = RESET_A) -> EpisodeRecord:  # fmt: skip
    return EpisodeRecord(
        episode_id=f"r:t:{n}:baseline", client="claude", task_id="t", pair_id=f"r:t:{n}",
        arm="baseline", quota_before=[_obs(before)], quota_after=[_obs(after, reset_after)],
    )  # fmt: skip


def _now(used: float | None, reset: str | None = RESET_A) -> dict[str, QuotaObservation]:
    return account_windows([_obs(used, reset)])


def test_readings_count_at_their_upper_bound() -> None:
    starts = start_windows(
        [_obs(20.0), _obs(None, window="seven-day"), _obs(3.0, provider="claude:opus")]
    )
    assert [s.window for s in starts] == [
        "five-hour"
    ]  # unknown and scoped windows are not ceilinged
    # nothing ran yet: the probe pair starts alone (used counts the reading's precision)
    first, starts = decide_window_unit(starts, _now(20.0), [], ceiling_percent=10, next_episodes=2)
    assert (first.admission, first.used_percent, first.per_episode_percent) == ("start", 1.0, None)
    held, _ = decide_window_unit(starts, _now(20.0), [], ceiling_percent=10, next_episodes=2,
                                 running_episodes=2)  # fmt: skip
    assert held.admission == "wait"
    # one episode read 20 -> 22: at most 3 points; two episodes recorded, window now at 24
    records = [_record(0, 20.0, 22.0), _record(1, 22.0, 24.0)]
    assert episode_window_use(records[0], "five-hour") == 3.0
    go, starts = decide_window_unit(
        starts, _now(24.0), records, ceiling_percent=11, next_episodes=2
    )
    # used 24 - 20 + 1 = 5, next 2 x 3 = 6: exactly 11 is not crossing
    assert (go.admission, go.used_percent, go.next_percent) == ("start", 5.0, 6.0)
    stop, _ = decide_window_unit(starts, _now(24.0), records, ceiling_percent=10.5, next_episodes=2)
    assert stop.admission == "stop" and "five-hour window: used 5 points" in stop.text()
    wait, _ = decide_window_unit(starts, _now(24.0), records, ceiling_percent=12, next_episodes=2,
                                 running_episodes=2)  # fmt: skip
    assert wait.admission == "wait"


def test_unread_windows_and_unmeasured_episodes_stop() -> None:
    starts = start_windows([_obs(5.0)])
    unread, kept = decide_window_unit(starts, _now(None), [], ceiling_percent=50, next_episodes=2)
    assert unread.admission == "stop" and "cannot be read now" in unread.text()
    assert kept == starts
    nothing, _ = decide_window_unit([], {}, [], ceiling_percent=50, next_episodes=2)
    assert nothing.admission == "stop" and "no subscription window" in nothing.text()
    # recorded episodes whose brackets read nothing: the spend per episode is unknown
    blind = [_record(0, None, None)]
    assert (
        decide_window_unit(starts, _now(9.0), blind, ceiling_percent=50, next_episodes=2)[
            0
        ].admission
        == "stop"
    )
    # already beyond the ceiling (another user of the account, a lowered ceiling): stop
    beyond, _ = decide_window_unit(starts, _now(30.0), [], ceiling_percent=20, next_episodes=2)
    assert beyond.admission == "stop"


def test_a_window_reset_carries_the_old_period_conservatively() -> None:
    starts = start_windows([_obs(90.0)])
    _, starts = decide_window_unit(starts, _now(96.0), [], ceiling_percent=100, next_episodes=1)
    # the window reset: 96 - 90 + 1 = 7 points carried, the new period counted from 0
    _, starts = decide_window_unit(
        starts, _now(2.0, RESET_B), [], ceiling_percent=100, next_episodes=1
    )
    (five,) = starts
    assert (five.carried_percent, five.start_percent, five.reset_id) == (7.0, 0.0, RESET_B)
    assert five.used_percent == 7.0 + 2.0 + 1.0
    # an episode read the old period higher than the gate did (96 -> 99 before the reset):
    # the carried use counts the highest reading the run took of it
    late = [_record(9, 96.0, 99.0)]
    start = start_windows([_obs(90.0)])
    _, start = decide_window_unit(start, _now(96.0), [], ceiling_percent=100, next_episodes=1)
    _, start = decide_window_unit(
        start, _now(2.0, RESET_B), late, ceiling_percent=100, next_episodes=1
    )
    assert start[0].carried_percent == 99.0 - 90.0 + 1.0
    # one more look (the run's final status): advanced; an unread window stays as it was
    (later,) = advance_windows(starts, _now(5.0, RESET_B))
    assert later.used_percent == 7.0 + 5.0 + 1.0
    assert advance_windows(starts, _now(None)) == starts
    # an episode whose bracket straddled the reset measured nothing
    assert episode_window_use(_record(0, 95.0, 1.0, reset_after=RESET_B), "five-hour") is None


def test_status_words_and_both_ceilings() -> None:
    assert stricter("start", "wait") == "wait" and stricter("stop", "wait") == "stop"
    window = WindowBudgetStatus(ceiling_percent=10, windows=start_windows([_obs(20.0)]))
    status = BudgetStatus.of([_record(0, 20.0, 22.0)], ceiling_tokens=None, stopped=True,
                             episodes_planned=6, window=window)  # fmt: skip
    dumped = status.to_json()
    assert dumped["ceiling_tokens"] is None and dumped["window"]["ceiling_percent"] == 10
    assert "at most 1 of 10% of the subscription window used" in budget_fact(dumped)
    assert budget_stop_words(dumped) == (
        "at most 1 of 10% of the subscription window used, 1 of 6 episodes recorded"
    )
    tokens_only = BudgetStatus.of([], ceiling_tokens=100, stopped=False, episodes_planned=2)
    assert "window" not in tokens_only.to_json()  # run.json as before for a token ceiling
    both = status.model_copy(update={"ceiling_tokens": 100, "stopped_at_ceiling": False})
    assert budget_fact(both.to_json()).count("budget ceiling") == 2
