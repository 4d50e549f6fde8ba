"""The canary evidence -> version-1 artifact mapping (pure) and the trial input digests."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pairlab.adapters.trial_inputs import open_sim_account, tree_digest
from pairlab.core.canary import (
    ArmRevision,
    Assignment,
    Budget,
    CheckResult,
    FrozenFixture,
    PlannedRun,
    RunEvidence,
    TrialManifest,
    accounting_provenance,
    build_artifact,
    to_identifier,
)
from pairlab.core.errors import InvalidInputError
from pairlab.core.schemas.quota import QuotaObservation
from pairlab.core.schemas.usage import UsageVector
from pairlab.core.verdict import judge_artifact_bytes

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
RESET = T0 + timedelta(hours=5)


def _manifest(concurrent: bool | None = False) -> TrialManifest:
    planned = [
        PlannedRun(
            episode_id=f"t:fix:cold:0:{arm}",
            pair_id="t:fix:cold:0",
            task_id="fix",
            stratum="cold",
            repetition=0,
            order=i,
            arm=arm,
        )
        for i, arm in enumerate(("candidate", "baseline"))
    ]
    return TrialManifest(
        trial_id="t",
        created_at=T0,
        intervention_id="iv",
        changed_dimensions=["implementation-revision"],
        baseline=ArmRevision(arm="baseline", revision="sim-effects:baseline"),
        candidate=ArmRevision(arm="candidate", revision="sim-effects:candidate-v2"),
        source_revision="git:abc",
        environment_id="img:local:sim-1.0.0",
        environment={},
        fixtures=[
            FrozenFixture(
                task_id="fix",
                fixture="median-stats",
                fixture_digest="sha256:" + "a" * 64,
                acceptance_contract_id="sha256:" + "b" * 64,
                required_checks=["median-checks"],
            )
        ],
        review_dimensions=["grader-correctness"],
        assignments=[Assignment(provider="claude", model="claude-default")],
        strata=["cold"],
        strata_meaning={"cold": "fresh"},
        repetitions=1,
        seed=0,
        quota_interval_s=4.0,
        unrelated_concurrent_use=concurrent,
        budget=Budget(
            episodes=2,
            estimated_tokens_per_episode=1,
            estimated_tokens_total=2,
            window_budget_tokens={},
            estimated_quota_percent={},
        ),
        planned=planned,
    )


def _obs(at: datetime, used: float) -> QuotaObservation:
    return QuotaObservation(
        provider="sim",
        window="five-hour",
        used_percent=used,
        precision_percent=1.0,
        resets_at=RESET,
        reset_id="five-hour-1",
        observed_at=at,
        source="sim:quota.json",
    )


def _evidence(
    arm: str,
    start: datetime,
    used: tuple[float, float],
    *,
    seconds: float = 4.0,
    latency: float = 300.0,
    passed: bool = True,
) -> RunEvidence:
    return RunEvidence(
        episode_id=f"t:fix:cold:0:{arm}",
        pair_id="t:fix:cold:0",
        task_id="fix",
        stratum="cold",
        repetition=0,
        order=0,
        arm=arm,
        exit_code=0,
        timed_out=False,
        checks=[CheckResult(name="median-checks", passed=passed)],
        observed_model="claude-sonnet",
        usage=UsageVector(
            uncached_input=10, cache_read=10, cache_write_5m=1, cache_write_1h=0, output=5
        ),
        usage_provenance={"measured": 3, "unknown-usage": 0},
        critical_path_ms=latency,
        notification_ms=latency,
        quota_before=[_obs(start, used[0])],
        quota_after=[_obs(start + timedelta(seconds=seconds), used[1])],
        interval_scheduled_s=4.0,
        interval_overrun=seconds > 4.0,
    )


def _judge(manifest: TrialManifest, *evidence: RunEvidence) -> dict[str, object]:
    artifact = build_artifact(manifest, list(evidence))
    return judge_artifact_bytes(json.dumps(artifact).encode()).to_json()


def test_cheaper_candidate_on_equal_intervals_is_supported() -> None:
    report = _judge(
        _manifest(),
        _evidence("candidate", T0, (0, 2)),
        _evidence("baseline", T0 + timedelta(seconds=5), (2, 9), latency=400.0),
    )
    assert report["verdict"] == "supported-candidate", report


def test_overrun_interval_is_inconclusive_and_unknown_concurrency_too() -> None:
    over = _judge(
        _manifest(),
        _evidence("candidate", T0, (0, 2), seconds=6.5),
        _evidence("baseline", T0 + timedelta(seconds=7), (2, 9), latency=400.0),
    )
    assert "quota-interval-mismatch" in over["reason_codes"]
    unknown = _judge(
        _manifest(concurrent=None),
        _evidence("candidate", T0, (0, 2)),
        _evidence("baseline", T0 + timedelta(seconds=5), (2, 9), latency=400.0),
    )
    assert unknown["subscription_verdict"] == "inconclusive"
    assert "unrelated-concurrent-quota-use" in unknown["reason_codes"]


def test_costlier_or_failing_candidate_is_rejected() -> None:
    worse = _judge(
        _manifest(),
        _evidence("candidate", T0, (0, 9)),
        _evidence("baseline", T0 + timedelta(seconds=5), (9, 12), latency=400.0),
    )
    assert worse["subscription_verdict"] == "rejected"
    failing = _judge(
        _manifest(),
        _evidence("candidate", T0, (0, 2), passed=False),
        _evidence("baseline", T0 + timedelta(seconds=5), (2, 9), latency=400.0),
    )
    assert "failed-required-check" in failing["reason_codes"]


def test_pair_with_a_missing_run_is_left_out() -> None:
    artifact = build_artifact(_manifest(), [_evidence("candidate", T0, (0, 2))])
    assert artifact["pairs"] == []


def test_identifiers_and_provenance() -> None:
    assert to_identifier("pairlab/simclient:1.0.0 local") == "pairlab-simclient:1.0.0-local"
    assert to_identifier("..") == "unknown"
    usage = UsageVector(output=1)
    assert accounting_provenance(usage, {"measured": 2}) == "measured-canonical"
    assert accounting_provenance(usage, {"measured": 2, "unknown-usage": 1}) == "unknown-usage"
    assert accounting_provenance(None, {"measured": 2}) == "unknown-usage"


def test_tree_digest_sees_content_and_names(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.py").write_text("1")
    first = tree_digest(tmp_path)
    assert first == tree_digest(tmp_path) and first.startswith("sha256:")
    (tmp_path / "a" / "x.py").write_text("2")
    second = tree_digest(tmp_path)
    (tmp_path / "a" / "x.py").rename(tmp_path / "a" / "y.py")
    assert len({first, second, tree_digest(tmp_path)}) == 3


def test_sim_account_is_fresh_and_private(tmp_path: Path) -> None:
    account = open_sim_account(tmp_path / "acct", {"five-hour": 100, "seven-day": 1000}, now=T0)
    state = json.loads((account / "quota.json").read_text())
    assert state["windows"]["five-hour"]["budget_tokens"] == 100
    assert state["windows"]["five-hour"]["resets_at"] == "2026-03-02T15:00:00Z"
    with pytest.raises(InvalidInputError):
        open_sim_account(account, {"five-hour": 100, "seven-day": 1000})
