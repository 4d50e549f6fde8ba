"""The resume rule (pairlab/core/frozen_settings.py): a resume never changes what a run measures."""

from __future__ import annotations

import pytest

from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.frozen_settings import check_nothing_dropped, resume_settings

FROZEN = {
    "suite": "core",
    "task_filter": [],
    "repetitions": 5,
    "arms": ["baseline", "optimizer"],
    "concurrency": 1,
    "run_id": "r1",
    "store": "s3://bucket/x",
}
# what the form sends when nothing is touched: its deployment's parameters
FORM = {
    **FROZEN,
    "task_filter": ["fix-median", "answer-cache-env"],
    "repetitions": 2,
    "concurrency": 2,
    "run_id": None,
    "store": "pairlab-store",
}


def test_untouched_form_values_take_the_runs_frozen_settings() -> None:
    requested = {**FORM, "run_id": "r1"}
    decision = resume_settings("r1", FROZEN, requested, FORM)
    assert decision.settings["task_filter"] == [] and decision.settings["repetitions"] == 5
    assert decision.settings["store"] == "s3://bucket/x"
    assert sorted(decision.taken_from_run) == ["repetitions", "store", "task_filter"]
    # concurrency is how the run is executed, not what it measures: the request applies
    assert decision.settings["concurrency"] == 2
    assert decision.changed == {"concurrency": {"run": 1, "now": 2}}


@pytest.mark.parametrize(
    ("field", "value"),
    [("repetitions", 3), ("task_filter", ["fix-median"]), ("arms", ["baseline", "full"])],
)
def test_a_changed_value_is_refused_naming_the_field(field: str, value: object) -> None:
    requested = {**FORM, "run_id": "r1", field: value}
    with pytest.raises(InvalidInputError) as err:
        resume_settings("r1", FROZEN, requested, FORM)
    assert err.value.reason == ReasonCode.RESUME_CHANGED and err.value.exit_code == 2
    assert f"{field} (run: " in err.value.message
    # only the changed field is named: the untouched ones are taken silently
    others = {"repetitions", "task_filter", "arms"} - {field}
    assert not any(f"{o} (run:" in err.value.message for o in others)


def test_a_request_equal_to_the_frozen_settings_changes_nothing() -> None:
    decision = resume_settings("r1", FROZEN, FROZEN, FORM)
    assert decision.settings == FROZEN and not decision.taken_from_run and not decision.changed


def test_a_field_the_run_never_froze_takes_the_request() -> None:
    requested = {**FROZEN, "intervention": "x"}  # a parameter added after the run started
    assert resume_settings("r1", FROZEN, requested, {}).settings["intervention"] == "x"


def test_dropping_a_recorded_episode_is_refused() -> None:
    check_nothing_dropped("r1", ["a", "b"], ["a", "b", "c"])
    with pytest.raises(InvalidInputError) as err:
        check_nothing_dropped("r1", ["a", "b", "x", "y", "z", "w"], ["a", "b"])
    assert err.value.reason == ReasonCode.RESUME_DROPS_EPISODES
    assert "leaves out 4 recorded episode(s) (w, x, y and 1 more)" in err.value.message
