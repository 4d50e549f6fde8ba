"""What a run can answer, before it runs (pairlab/core/run_scope.py; issue 29 item 5)."""

from __future__ import annotations

from pairlab.core.run_scope import RunScope


def _scope(**given: object) -> RunScope:
    base: dict[str, object] = {
        "pairs_per_cohort": 5,
        "gate": 5,
        "plan_min_pairs": 5,
        "concurrency": 1,
        "measures_quota": True,
        "one_account_at_a_time": False,
    }
    return RunScope(**{**base, **given})  # type: ignore[arg-type]


def test_enough_pairs_one_at_a_time_answers_everything() -> None:
    scope = _scope()
    assert not scope.is_limited
    assert scope.lines() == ["5 pairs per cohort >= gate 5: each cohort can be decided"]


def test_fewer_pairs_than_the_gate_is_insufficient_by_design() -> None:
    (line,) = _scope(pairs_per_cohort=2).lines()
    assert line.startswith("INSUFFICIENT by design: 2 pairs per cohort < gate 5")
    assert "use at least 5 repetitions" in line
    assert _scope(pairs_per_cohort=2).labels() == [
        "INSUFFICIENT by design (2 pairs per cohort < gate 5)"
    ]
    assert _scope().labels() == []


def test_a_low_gate_is_exploratory() -> None:
    scope = _scope(pairs_per_cohort=2, gate=2)
    assert not scope.insufficient and scope.exploratory
    assert scope.lines()[1].startswith("EXPLORATORY: gate 2 < the study plan's minimum of 5")


def test_concurrency_spoils_subscription_evidence_only_when_quota_is_measured() -> None:
    assert "concurrency 2 > 1" in _scope(concurrency=2).lines()[-1]
    assert not _scope(concurrency=2, measures_quota=False).spoils_quota
    assert not _scope(concurrency=2, one_account_at_a_time=True).spoils_quota
