"""A token increase is never explained as "above the adjusted threshold" alone (issue 29 item 9):
it is not a saving, which is the first reason it is not a win."""

from __future__ import annotations

from pairlab.core.report.prefect_ui import why_not
from pairlab.core.report.words import decision_word


def _effect(estimate: float, reason: str) -> dict[str, object]:
    return {"decision": "no-evidence", "reason": reason, "estimate": estimate}


def test_an_increase_says_it_is_not_a_saving() -> None:
    up = _effect(812.0, "adjusted-threshold")
    assert why_not(up) == "an increase, not a saving (above the adjusted threshold)"
    assert decision_word(up) == why_not(up)  # report.md / report.html say the same
    assert why_not(_effect(5.0, "below-gate")).startswith("an increase, not a saving (")


def test_a_saving_keeps_its_reason() -> None:
    assert why_not(_effect(-812.0, "adjusted-threshold")) == "above the adjusted threshold"
    assert why_not({"decision": "no-evidence", "reason": None, "estimate": 3.0}) == ""
    assert why_not(_effect(4.0, "correctness-regressed")) == decision_word(
        _effect(4.0, "correctness-regressed")
    )
