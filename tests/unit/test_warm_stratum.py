"""Claim 4's warm stratum: planned together with the cold one, analysed apart."""

from __future__ import annotations

from pairlab.core.analysis.study_plan import ResolvedPlan, default_plan
from pairlab.core.findings.warm_stratum import (
    plan_warm_schedule,
    render_warm_markdown,
    warm_effects,
)
from pairlab.core.report.run import analyse_records
from pairlab.core.schedule import plan_schedule
from pairlab.core.schemas.episode import EpisodeRecord

ARMS = ["baseline", "optimizer", "retrieval"]


def test_cold_and_warm_are_planned_together_with_their_own_pairs() -> None:
    schedule = plan_warm_schedule(["t1", "t2"], ARMS, 3, 7, "run")
    cold = [e for e in schedule.entries if e.stratum == "cold"]
    warm = [e for e in schedule.entries if e.stratum == "warm"]
    assert len(cold) == len(warm) == 2 * 3 * len(ARMS) and schedule.strata == ["cold", "warm"]
    assert {e.pair_id for e in cold}.isdisjoint({e.pair_id for e in warm})
    assert all(e.pair_id.startswith("run:warm:") for e in warm)
    plain = plan_schedule(["t1", "t2"], ARMS, 3, 7, "run")
    # the same Williams orders per (task, repetition) in both strata
    order = {(e.task_id, e.repetition, e.arm): e.order for e in plain.entries}
    assert all(order[(e.task_id, e.repetition, e.arm)] == e.order for e in warm)
    assert len(schedule.units()) == 2 * 2 * 3


def records(stratum: str, saving: int) -> list[EpisodeRecord]:
    out = []
    for rep in range(6):
        pair = f"run:{'warm:' if stratum == 'warm' else ''}t:{rep}"
        for arm, calls in (
            ("baseline", 10),
            ("optimizer", 9 + rep % 2),
            ("retrieval", 10 + rep % 2 - saving),
        ):
            out.append(
                EpisodeRecord(
                    episode_id=f"{pair}:{arm}",
                    client="claude",
                    client_version="2",
                    model="m",
                    task_id="t",
                    pair_id=pair,
                    arm=arm,
                    stratum=stratum,
                    api_calls=calls,
                    total_tokens=calls * 1000 + rep,
                    correct=True,
                    success=True,
                    finding_ids=["f-h"] if stratum == "warm" and arm == "retrieval" else [],
                )
            )
    return out


def test_the_analysis_never_pools_cold_and_warm() -> None:
    both = [*records("cold", 0), *records("warm", 4)]
    plan = ResolvedPlan.of(default_plan(2), "default")
    analysis = analyse_records(both, run_id="run", gate=2, plan=plan)
    strata = sorted(c["key"]["stratum"] for c in analysis["cohorts"])
    assert strata == ["cold", "warm"]
    section = warm_effects(both)
    assert section is not None
    by = {c["key"]["stratum"]: c for c in section["cohorts"]}
    assert by["warm"]["pairs"] == by["cold"]["pairs"] == 6  # not 12: never pooled
    assert by["warm"]["metrics"]["apiCalls"]["estimate"] == -3.0
    assert by["cold"]["metrics"]["apiCalls"]["estimate"] == 1.0
    assert by["warm"]["metrics"]["apiCalls"]["high"] < 0 < by["cold"]["metrics"]["apiCalls"]["low"]
    assert by["warm"]["deliveredFindings"] == ["f-h"] and by["cold"]["deliveredFindings"] == []
    assert "cold vs warm strata, reported separately" in "\n".join(render_warm_markdown(section))
    assert warm_effects(records("cold", 0)) is None  # no warm stratum: no section
