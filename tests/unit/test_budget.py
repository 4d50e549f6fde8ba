"""The budget ceiling's rule (pairlab/core/budget.py) and its place in a resume's frozen
settings (pairlab/core/frozen_settings.py)."""

from __future__ import annotations

import pytest

from pairlab.core.budget import BudgetStatus, budget_fact, decide_next_unit
from pairlab.core.errors import InvalidInputError, ReasonCode, RunStopped
from pairlab.core.frozen_settings import resume_settings
from pairlab.core.schemas.episode import EpisodeRecord


def test_nothing_recorded_the_probe_pair_starts_alone() -> None:
    first = decide_next_unit([], ceiling_tokens=10, next_episodes=4)
    assert first.admission == "start" and first.spent_tokens is None
    held = decide_next_unit([], ceiling_tokens=10, next_episodes=4, running_episodes=4)
    assert held.admission == "wait"


def test_spent_plus_next_pair_at_the_largest_episode_decides() -> None:
    # spent 300, largest episode 200: the next pair of 2 could spend 400 -> 700
    spends: list[int | None] = [100, 200]
    assert decide_next_unit(spends, ceiling_tokens=700, next_episodes=2).admission == "start"
    stop = decide_next_unit(spends, ceiling_tokens=699, next_episodes=2)
    assert stop.admission == "stop"
    assert (stop.spent_tokens, stop.per_episode_tokens, stop.next_tokens) == (300, 200, 400)
    assert "spent 300" in stop.text() and "699" in stop.text()


def test_a_running_pair_holds_the_next_until_it_is_recorded() -> None:
    spends: list[int | None] = [100, 100]
    wait = decide_next_unit(spends, ceiling_tokens=500, next_episodes=2, running_episodes=2)
    assert wait.admission == "wait" and wait.running_tokens == 200
    go = decide_next_unit(spends, ceiling_tokens=600, next_episodes=2, running_episodes=2)
    assert go.admission == "start"


def test_missing_usage_is_counted_at_the_estimate_never_zero() -> None:
    with_null = decide_next_unit([100, None, 300], ceiling_tokens=10_000, next_episodes=2)
    assert with_null.spent_tokens == 100 + 300 + 300  # the null counted at the largest (300)
    assert with_null.unmeasured_episodes == 1 and with_null.measured_episodes == 2
    assert "1 without usage counted at the estimate" in with_null.text()
    # read as zero, 400 + 600 would fit under 1_000; counted at the estimate it does not
    assert (
        decide_next_unit([100, None, 300], ceiling_tokens=1_000, next_episodes=2).admission
        == "stop"
    )


def test_records_without_any_usage_stop_the_run() -> None:
    unknown = decide_next_unit([None, None], ceiling_tokens=10**9, next_episodes=2)
    assert unknown.admission == "stop" and unknown.spent_tokens is None
    assert "spend unknown" in unknown.text()


def test_a_ceiling_already_crossed_stops_at_once() -> None:
    assert decide_next_unit([500, 600], ceiling_tokens=1_000, next_episodes=1).admission == "stop"


def _record(n: int, tokens: int | None) -> EpisodeRecord:
    return EpisodeRecord(
        episode_id=f"r:t:{n}:baseline", client="sim", task_id="t", pair_id=f"r:t:{n}",
        arm="baseline", total_tokens=tokens,
    )  # fmt: skip


def test_status_for_run_json_and_the_report() -> None:
    status = BudgetStatus.of(
        [_record(0, 40), _record(1, None)], ceiling_tokens=100, stopped=True, episodes_planned=6
    )
    assert (status.spent_tokens, status.unmeasured_episodes) == (80, 1)
    assert (status.episodes_recorded, status.episodes_planned) == (2, 6)
    fact = budget_fact(status.model_dump(mode="json"))
    assert "STOPPED AT THE BUDGET CEILING" in fact and "80 of 100" in fact and "2 of 6" in fact
    assert budget_fact(None) == ""


def test_run_stopped_is_exit_4_with_its_summary_in_json() -> None:
    stopped = RunStopped("budget-exhausted: ...", details={"run_id": "r", "episodes": 2})
    assert stopped.exit_code == 4 and stopped.reason == ReasonCode.BUDGET_EXHAUSTED
    assert stopped.to_json()["reason_code"] == "budget-exhausted"
    assert stopped.to_json()["run_id"] == "r"


FROZEN = {"run_id": "r", "repetitions": 3, "budget_tokens": 1_000}
UNTOUCHED = {"run_id": None, "repetitions": 5, "budget_tokens": None}


def test_a_resume_may_give_a_new_ceiling_and_records_it() -> None:
    raised = resume_settings(
        "r", FROZEN, {**UNTOUCHED, "run_id": "r", "budget_tokens": 5_000}, UNTOUCHED
    )
    assert raised.settings["budget_tokens"] == 5_000 and raised.settings["repetitions"] == 3
    assert raised.changed == {"budget_tokens": {"run": 1_000, "now": 5_000}}
    lowered = resume_settings("r", FROZEN, {**FROZEN, "budget_tokens": 10}, UNTOUCHED)
    assert lowered.settings["budget_tokens"] == 10


def test_an_untouched_resume_keeps_the_approved_ceiling() -> None:
    kept = resume_settings("r", FROZEN, {**UNTOUCHED, "run_id": "r"}, UNTOUCHED)
    assert kept.settings["budget_tokens"] == 1_000
    assert "budget_tokens" in kept.taken_from_run and not kept.changed


def test_what_the_run_measures_is_still_refused_beside_a_new_ceiling() -> None:
    asked = {**FROZEN, "repetitions": 4, "budget_tokens": 5_000}
    with pytest.raises(InvalidInputError) as refused:
        resume_settings("r", FROZEN, asked, UNTOUCHED)
    assert refused.value.reason == ReasonCode.RESUME_CHANGED
    assert "repetitions" in refused.value.message and "budget_tokens" not in refused.value.message
