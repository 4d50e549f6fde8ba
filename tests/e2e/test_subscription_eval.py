"""Subscription verdicts per cohort from real simulated evals (issue 16, item 2).

The evidence-eval flow runs the simulated client on the local backend through the
real Prefect engine with the quota-aware schedule (each arm's episodes in equal,
back-to-back scheduled intervals on one simulated account). The simulator is the
instrument: its quota model charges each arm's billed tokens times the arm's
``quota_factor``, so a reduction is planted in one arm only and the other arms draw
the same tokens. Per-episode noise is kept small so that a null arm's interval can
never differ from the baseline's by more than the whole-percent precision: the
verdict for it is inconclusive by construction, not by luck.

* the planted arm's cohort verdict is supported, the other arm's is not; the effect
  equals the intervals' measured consumption; ``pairlab compare`` on the same
  intervals (one loom pair per quota pair) gives the same answer, pair by pair;
* a reset crossed mid-episode, unknown precision and concurrent use of the account
  give inconclusive with the canary's reason codes, and a null consumption is
  excluded from the effect with its reason, never counted as 0.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from flows.evidence_eval import evidence_eval
from flows.params import EvidenceEvalParams
from pairlab.adapters.run.quota_interval_files import read_intervals_jsonl
from pairlab.adapters.run.trial_inputs import open_sim_account
from pairlab.core.canary.manifest import to_identifier
from pairlab.core.canary.quota import quota_observations
from pairlab.core.quota.intervals import QuotaIntervalRecord
from pairlab.core.verdict.artifact import Provider
from tests.support import compare_cases, run_pairlab

pytestmark = [pytest.mark.prefect, pytest.mark.e2e]
BUDGETS = {"five-hour": 400_000, "seven-day": 800_000}
INTERVAL_S = 10.0
NEUTRAL = {"effects": {"uncached_input": 1.0, "cache_read": 1.0, "output": 1.0}}
QUIET = {"noise": {"episode_sigma": 0.02, "dimension_sigma": 0.02}}
QUOTA_CODES = frozenset(
    {
        "quota-interval-mismatch",
        "quota-reset-crossing",
        "unrelated-concurrent-quota-use",
        "unknown-quota-precision",
        "same-reset-utilization-decrease",
        "subscription-consumption-regression",
        "quota-change-within-uncertainty",
        "missing-quota-telemetry",
        "missing-quota-window",
    }
)


def _run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_id: str,
    config: dict[str, Any],
    **overrides: Any,
) -> Path:
    quota = {"five_hour_budget_tokens": BUDGETS["five-hour"]}
    quota |= {"seven_day_budget_tokens": BUDGETS["seven-day"]}
    merged = {**QUIET, **config, "quota": {**quota, **config.get("quota", {})}}
    monkeypatch.setenv("PAIRLAB_SIM_EFFECTS", json.dumps(merged))
    work = tmp_path / run_id
    open_sim_account(work / "sim-account", BUDGETS)
    params = EvidenceEvalParams(
        run_id=run_id,
        min_pairs=2,
        seed=11,
        store=str(tmp_path / "store"),
        work_dir=str(work),
        task_filter=["fix-median"],
        backend="local",
        quota_interval_episodes=2,
        quota_interval_s=INTERVAL_S,
        **overrides,
    )
    state = evidence_eval(params, return_state=True)
    assert state.is_completed(), state
    return work / "runs" / run_id


def _cohort(run: Path) -> dict[str, Any]:
    report = json.loads((run / "report.json").read_text())
    assert report["subscription"]["unit"] == "interval"
    (cohort,) = report["subscription"]["cohorts"]
    return cohort


def _verdict(cohort: dict[str, Any], treatment: str) -> dict[str, Any]:
    (found,) = [v for v in cohort["verdicts"] if v["treatment"] == treatment]
    assert found["control"] == "baseline"
    return found


def _five_hour(interval: QuotaIntervalRecord) -> float | None:
    (entry,) = [c for c in interval.quota_consumption or [] if c.window == "five-hour"]
    return entry.consumption_percent


def _loom_run(template: Any, arm: str, unit: str, interval: QuotaIntervalRecord) -> dict[str, Any]:
    """A valid loom run (the golden fixture's) carrying this interval's observations."""
    run: dict[str, Any] = template.run(
        "baseline" if arm == "baseline" else "candidate",
        unit,
        0,
        (0.0, 0.0),
        template.claude_vector(3000, 90000, 12000, 0, 4000),
    )
    run["quota_observations"] = quota_observations(
        Provider.CLAUDE,
        [s for s in interval.quota_start or [] if ":" not in s.provider],
        [s for s in interval.quota_end or [] if ":" not in s.provider],
        interval.unrelated_concurrent_quota_use,
    )
    return run


def _compare(
    tmp_path: Path, intervals: list[QuotaIntervalRecord], treatment: str
) -> dict[str, Any]:
    """``pairlab compare --json`` on an artifact of one loom pair per quota pair."""
    cases = compare_cases()
    doc = cases.base()
    by_pair: dict[str, dict[str, QuotaIntervalRecord]] = {}
    for interval in intervals:
        by_pair.setdefault(interval.quota_pair_id, {})[interval.arm] = interval
    doc["pairs"] = []
    for pair_id in sorted(by_pair):
        unit = to_identifier(pair_id)
        arms = by_pair[pair_id]
        doc["pairs"].append(
            {
                "work_unit_id": unit,
                "baseline": _loom_run(cases, "baseline", unit, arms["baseline"]),
                "candidate": _loom_run(cases, treatment, unit, arms[treatment]),
            }
        )
    path = tmp_path / f"{treatment}-vs-baseline.loom.json"
    path.write_text(json.dumps(doc))
    proc = run_pairlab("compare", str(path), "--json")
    assert proc.returncode in (0, 1, 2), proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_planted_quota_reduction_is_supported_for_its_arm_only_and_compare_agrees(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = {
        "arms": {
            "baseline": NEUTRAL,
            "optimizer": NEUTRAL,  # the same tokens and quota as baseline: a null arm
            "full": {**NEUTRAL, "quota_factor": 0.5},  # half the quota for the same tokens
        }
    }
    run = _run(
        tmp_path,
        monkeypatch,
        "sub-planted",
        config,
        repetitions=4,
        arms=["baseline", "optimizer", "full"],
    )
    intervals = read_intervals_jsonl(run)
    assert len(intervals) == 6  # 2 blocks x 3 arms
    for interval in intervals:
        assert interval.complete and not interval.overrun, interval.interval_id
        assert interval.unrelated_concurrent_quota_use is False
    cohort = _cohort(run)
    full, optimizer = _verdict(cohort, "full"), _verdict(cohort, "optimizer")
    assert full["verdict"] == "supported-candidate", full
    assert full["intervals"]["reduction"] >= 2 and full["intervals"]["regression"] == 0
    assert optimizer["verdict"] == "inconclusive", optimizer
    assert optimizer["intervals"]["reduction"] == 0
    assert set(optimizer["reasons"]) == {"quota-change-within-uncertainty"}

    # the paired effect is the mean of the measured interval differences (2 quota pairs)
    by = {(i.quota_pair_id, i.arm): _five_hour(i) for i in intervals}
    blocks = sorted({i.quota_pair_id for i in intervals})
    diffs = [by[(b, "full")] - by[(b, "baseline")] for b in blocks]  # type: ignore[operator]
    (effect,) = [
        e for e in cohort["effects"] if (e["treatment"], e["window"]) == ("full", "five-hour")
    ]
    assert effect["n"] == 2 and effect["excludedNull"] == 0
    assert effect["estimate"] == pytest.approx(sum(diffs) / len(diffs))
    assert effect["estimate"] < -2  # ~ -5 points per interval of two episodes

    # the headline counts the cohort where it belongs
    report = json.loads((run / "report.json").read_text())
    (group,) = report["headline"]["groups"]
    rows = {r["treatment"]: r["subscription"] for r in group["contrasts"]}
    assert (rows["full"]["win"], rows["full"]["noEvidence"]) == (1, 0)
    assert (rows["optimizer"]["win"], rows["optimizer"]["noEvidence"]) == (0, 1)

    # pairlab compare on the same intervals: the same verdict, pair by pair and overall
    for treatment, verdict in (("full", full), ("optimizer", optimizer)):
        compared = _compare(tmp_path, intervals, treatment)
        assert compared["subscription_verdict"] == verdict["verdict"], treatment
        assert len(compared["pairs"]) == len(verdict["perPair"]) == 2
        for loom_pair, ours in zip(compared["pairs"], verdict["perPair"], strict=True):
            assert loom_pair["work_unit_id"] == to_identifier(ours["pairId"])
            assert loom_pair["subscription_verdict"] == ours["verdict"]
            assert set(loom_pair["reason_codes"]) & QUOTA_CODES == set(ours["reasons"])
            assert loom_pair["quota_comparisons"] == ours["comparisons"]


def test_reset_crossing_mid_episode_is_inconclusive_and_nulls_stay_out_of_effects(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = {
        "arms": {"baseline": NEUTRAL, "full": {**NEUTRAL, "quota_factor": 0.5}},
        "quota": {"mid_episode_reset": {"p": 1.0, "windows": ["five-hour"]}},
    }
    run = _run(tmp_path, monkeypatch, "sub-reset", config, repetitions=4, arms=["baseline", "full"])
    cohort = _cohort(run)
    verdict = _verdict(cohort, "full")
    assert verdict["verdict"] == "inconclusive"
    assert "quota-reset-crossing" in verdict["reasons"]
    assert verdict["intervals"]["not-evaluable"] >= 2  # every five-hour interval
    five = [e for e in cohort["effects"] if e["window"] == "five-hour"]
    (effect,) = five
    # every five-hour interval crossed a reset: no value, two pairs excluded with the
    # reason of each of their four null intervals, and no estimate (never a 0)
    assert effect["n"] == 0 and effect["estimate"] is None
    assert effect["excludedNull"] == 2
    assert effect["excludedByReason"] == {"quota-reset-crossing": 4}
    (week,) = [e for e in cohort["effects"] if e["window"] == "seven-day"]
    assert week["n"] == 2 and week["estimate"] is not None and week["estimate"] < 0
    arms = {(a["window"], a["arm"]): a for a in cohort["arms"]}
    assert arms[("five-hour", "baseline")]["usable"] == 0
    assert arms[("five-hour", "baseline")]["excludedByReason"] == {"quota-reset-crossing": 2}
    markdown = (run / "report.md").read_text()
    assert "quota-reset-crossing" in markdown


def test_unknown_precision_is_inconclusive(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = {
        "arms": {"baseline": NEUTRAL, "full": {**NEUTRAL, "quota_factor": 0.5}},
        "quota": {"report_precision": False},
    }
    run = _run(
        tmp_path, monkeypatch, "sub-precision", config, repetitions=2, arms=["baseline", "full"]
    )
    verdict = _verdict(_cohort(run), "full")
    assert verdict["verdict"] == "inconclusive"
    assert set(verdict["reasons"]) == {"unknown-quota-precision"}


def test_concurrent_use_of_the_account_is_inconclusive(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone else uses the account while the eval runs (another session charging it
    through the simulator's own accounting, as an episode does): the simulator's charge
    log shows it inside the intervals, whatever the planted reduction."""
    from pairlab_simclient.config import load_config
    from pairlab_simclient.quota import charge_quota

    config = {"arms": {"baseline": NEUTRAL, "full": {**NEUTRAL, "quota_factor": 0.5}}}
    account = tmp_path / "sub-concurrent" / "sim-account"
    stop = threading.Event()
    sim_config = load_config({})

    def other_session() -> None:
        while not stop.wait(1.5):
            if (account / "quota.json").exists():
                charge_quota(
                    account, datetime.now(UTC), [2000], sim_config, episode_id="someone-else"
                )

    helper = threading.Thread(target=other_session, daemon=True)
    helper.start()
    try:
        run = _run(
            tmp_path,
            monkeypatch,
            "sub-concurrent",
            config,
            repetitions=2,
            arms=["baseline", "full"],
        )
    finally:
        stop.set()
        helper.join(timeout=10)
    intervals = read_intervals_jsonl(run)
    assert intervals and all(i.unrelated_concurrent_quota_use for i in intervals)
    verdict = _verdict(_cohort(run), "full")
    assert verdict["verdict"] == "inconclusive"
    assert set(verdict["reasons"]) == {"unrelated-concurrent-quota-use"}
