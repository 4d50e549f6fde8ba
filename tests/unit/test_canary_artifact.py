"""The canary evidence → loom version-1 artifact writer (pure) and the trial input digests.

The writer's artifact must satisfy every structural rule of LOOM-ARTIFACT §1
(checked twice: by the verdict's own structure rules and by an independent
walk of the JSON), round-trip through a file and be judged identically, and map
the readers' usage and the canary's quota snapshots to loom's fields exactly.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pairlab.adapters.run.trial_inputs import open_sim_account, tree_digest
from pairlab.core.canary import (
    ArmRevision,
    Assignment,
    Budget,
    CheckResult,
    FrozenFixture,
    PlannedRun,
    RunEvidence,
    TrialManifest,
    build_artifact,
    to_identifier,
)
from pairlab.core.canary.quota import quota_observation, quota_observations
from pairlab.core.canary.tokens import accounting, loom_provider, loom_vector
from pairlab.core.errors import InvalidInputError
from pairlab.core.schemas.quota import QuotaObservation
from pairlab.core.schemas.usage import UsageVector
from pairlab.core.verdict import judge_artifact_bytes, judge_file
from pairlab.core.verdict.artifact import Provider, TokenVector
from pairlab.core.verdict.loading import load_artifact
from pairlab.core.verdict.structure import artifact_findings, duplicate_run_ids, pair_findings
from pairlab.core.verdict.tokens import vector_problem

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
RESET = T0 + timedelta(hours=5)
TASKS = ("fix", "cfg")
USAGE = UsageVector(uncached_input=10, cache_read=10, cache_write_5m=1, cache_write_1h=0, output=5)
BASELINE_USAGE = UsageVector(
    uncached_input=20, cache_read=15, cache_write_5m=2, cache_write_1h=0, output=8
)
MEASURED = {"measured": 3, "duplicate": 1, "unknown-usage": 0, "synthetic-error": 0}


def _fixture(task: str) -> FrozenFixture:
    return FrozenFixture(
        task_id=task,
        fixture=f"{task}-fixture",
        fixture_digest="sha256:" + "a" * 64,
        acceptance_contract_id="sha256:" + "b" * 64,
        required_checks=[f"{task}-checks", "lint"],
    )


def _planned(task: str, stratum: str, rep: int) -> list[PlannedRun]:
    pair = f"t:{task}:{stratum}:{rep}"
    arms = ("candidate", "baseline") if rep % 2 == 0 else ("baseline", "candidate")
    return [
        PlannedRun(
            episode_id=f"{pair}:{arm}",
            pair_id=pair,
            task_id=task,
            stratum=stratum,
            repetition=rep,
            order=i,
            arm=arm,
        )
        for i, arm in enumerate(arms)
    ]


def _manifest(
    concurrent: bool | None = False,
    provider: str = "claude",
    effort: str | None = None,
    tasks: tuple[str, ...] = ("fix",),
    strata: tuple[str, ...] = ("cold",),
    reps: int = 1,
) -> TrialManifest:
    planned = [p for t in tasks for s in strata for r in range(reps) for p in _planned(t, s, r)]
    return TrialManifest(
        trial_id="t",
        created_at=T0,
        intervention_id="iv one/two",  # free text becomes an identifier
        changed_dimensions=["implementation-revision"],
        baseline=ArmRevision(arm="baseline", revision="sim-effects:baseline"),
        candidate=ArmRevision(arm="candidate", revision="sim-effects:candidate-v2"),
        source_revision="git:abc",
        environment_id="img:local:sim-1.0.0",
        environment={},
        fixtures=[_fixture(t) for t in tasks],
        review_dimensions=["grader-correctness"],
        assignments=[Assignment(provider=provider, model="claude-default", effort=effort)],
        strata=list(strata),
        strata_meaning={s: s for s in strata},
        repetitions=reps,
        seed=0,
        quota_interval_s=4,
        unrelated_concurrent_use=concurrent,
        budget=Budget(
            episodes=len(planned),
            estimated_tokens_per_episode=1,
            estimated_tokens_total=len(planned),
            window_budget_tokens={},
            estimated_quota_percent={},
        ),
        planned=planned,
    )


def _obs(
    at: datetime, used: float | None, window: str = "five-hour", **kw: Any
) -> QuotaObservation:
    fields: dict[str, Any] = {
        "provider": "sim",
        "window": window,
        "used_percent": used,
        "precision_percent": 1.0,
        "resets_at": RESET,
        "reset_id": f"{window}-1",
        "observed_at": at,
        "source": "sim:quota.json",
    }
    return QuotaObservation(**(fields | kw))


def _evidence(
    arm: str,
    start: datetime,
    used: tuple[float, float],
    *,
    seconds: float = 4.0,
    latency: float = 300.0,
    passed: bool | None = True,
    task: str = "fix",
    stratum: str = "cold",
    rep: int = 0,
    usage: UsageVector | str | None = "by arm",
    labels: dict[str, int] | None = None,
    model: str | None = "claude-sonnet",
) -> RunEvidence:
    end = start + timedelta(seconds=seconds)
    return RunEvidence(
        episode_id=f"t:{task}:{stratum}:{rep}:{arm}",
        pair_id=f"t:{task}:{stratum}:{rep}",
        task_id=task,
        stratum=stratum,
        repetition=rep,
        order=0,
        arm=arm,
        exit_code=0,
        timed_out=False,
        checks=[
            CheckResult(name=f"{task}-checks", passed=passed),
            CheckResult(name="lint", passed=True),
        ],
        observed_model=model,
        usage=(BASELINE_USAGE if arm == "baseline" else USAGE) if isinstance(usage, str) else usage,
        usage_provenance=MEASURED if labels is None else labels,
        critical_path_ms=latency,
        notification_ms=latency + 20.4,
        quota_before=[_obs(start, used[0]), _obs(start, 30.0, "seven-day")],
        quota_after=[_obs(end, used[1]), _obs(end, 30.0, "seven-day")],
        interval_scheduled_s=4.0,
        interval_overrun=seconds > 4.0,
    )


def _pair(**kw: Any) -> list[RunEvidence]:
    """A cheaper, faster candidate run first, then its baseline, on equal intervals."""
    return [
        _evidence("candidate", T0, (0, 2), **kw),
        _evidence("baseline", T0 + timedelta(seconds=5), (2, 9), latency=400.0, **kw),
    ]


def _judge(manifest: TrialManifest, evidence: list[RunEvidence]) -> dict[str, Any]:
    return judge_artifact_bytes(json.dumps(build_artifact(manifest, evidence)).encode()).to_json()


def test_cheaper_candidate_on_equal_intervals_is_supported() -> None:
    report = _judge(_manifest(), _pair())
    assert report["verdict"] == "supported-candidate", report
    assert report["pairs"][0]["work_unit_id"] == "fix:cold:r0"
    # the seven-day window did not move (within the precision): it does not block support
    assert [q["window"] for q in report["pairs"][0]["quota_comparisons"]] == [
        "five-hour",
        "seven-day",
    ]


def test_overrun_interval_is_inconclusive_and_unknown_concurrency_too() -> None:
    over = _judge(
        _manifest(),
        [
            _evidence("candidate", T0, (0, 2), seconds=5.2),
            _evidence("baseline", T0 + timedelta(seconds=7), (2, 9), latency=400.0),
        ],
    )
    assert over["reason_codes"] == ["quota-interval-mismatch"]
    unknown = _judge(_manifest(concurrent=None), _pair())
    assert unknown["subscription_verdict"] == "inconclusive"
    assert unknown["reason_codes"] == ["unrelated-concurrent-quota-use"]


def test_a_late_after_snapshot_within_the_second_keeps_durations_equal() -> None:
    late = [
        _evidence("candidate", T0 + timedelta(milliseconds=40), (0, 2), seconds=4.9),
        _evidence("baseline", T0 + timedelta(seconds=5, milliseconds=3), (2, 9), latency=400.0),
    ]
    assert _judge(_manifest(), late)["verdict"] == "supported-candidate"


def test_costlier_or_failing_candidate_is_rejected() -> None:
    worse = _judge(
        _manifest(),
        [
            _evidence("candidate", T0, (0, 9)),
            _evidence("baseline", T0 + timedelta(seconds=5), (9, 12), latency=400.0),
        ],
    )
    assert worse["subscription_verdict"] == "rejected"
    failing = _judge(_manifest(), _pair(passed=False))
    assert failing["verdict"] == "rejected"
    assert "failed-required-check" in failing["reason_codes"]


def test_unknown_check_results_are_missing_quality_evidence() -> None:
    report = _judge(_manifest(), _pair(passed=None))
    assert report["verdict"] == "inconclusive"
    assert {"missing-quality-evidence", "baseline-quality-incomplete"} <= set(
        report["reason_codes"]
    )


def test_pair_with_a_missing_run_is_left_out() -> None:
    artifact = build_artifact(_manifest(), [_evidence("candidate", T0, (0, 2))])
    assert artifact["pairs"] == []
    assert judge_artifact_bytes(json.dumps(artifact).encode()).reason_codes == [
        "no-comparison-pairs"
    ]


def test_a_pair_with_a_provider_limited_run_is_left_out_and_never_judged() -> None:
    """A run a provider limit ended is evidence of the limit, not of its arm: its pair is
    not in the artifact (the complete one beside it is), so the verdict never reads it."""
    limited = [
        _evidence("candidate", T0, (0, 2), rep=1),
        _evidence("baseline", T0 + timedelta(seconds=5), (2, 2), rep=1).model_copy(
            update={"excluded_reason": "provider-limit", "limit_kind": "usage-limit"}
        ),
    ]
    artifact = build_artifact(_manifest(reps=2), [*_pair(), *limited])
    assert [p["work_unit_id"] for p in artifact["pairs"]] == ["fix:cold:r0"]
    alone = build_artifact(_manifest(reps=2), limited)
    assert alone["pairs"] == []
    assert judge_artifact_bytes(json.dumps(alone).encode()).reason_codes == ["no-comparison-pairs"]


# the writer's fields


def test_identifiers_effort_latency_and_checks() -> None:
    assert to_identifier("pairlab/simclient:1.0.0 local") == "pairlab-simclient:1.0.0-local"
    assert to_identifier("..") == "unknown"
    artifact = build_artifact(_manifest(), _pair())
    run = artifact["pairs"][0]["candidate"]
    assert artifact["intervention"]["intervention_id"] == "iv-one-two"
    assert run["assignments"] == [
        {"provider": "claude", "model": "claude-sonnet", "effort": "default"}
    ]
    assert (run["critical_path_ms"], run["notification_latency_ms"]) == (300, 320)
    assert run["required_checks"] == [
        {"command_id": "fix-checks", "contract_id": "sha256:" + "b" * 64, "verdict": "passed"},
        {"command_id": "lint", "contract_id": "sha256:" + "b" * 64, "verdict": "passed"},
    ]
    assert (run["accepted"], run["semantic_completion"]) == (True, "passed")
    assert (run["retry_count"], run["fix_count"]) == (0, 0)


@pytest.mark.parametrize(
    ("usage", "labels", "expected"),
    [
        (USAGE, {"measured": 2, "duplicate": 5, "replay": 1}, (True, "measured")),
        (USAGE, {"measured": 2, "unknown-usage": 1}, (False, "partial")),
        (USAGE, {"measured": 2, "malformed-line": 1}, (False, "partial")),
        (USAGE, {"measured": 0, "summary": 1}, (False, "partial")),
        (UsageVector(), {"measured": 0}, (False, "unknown")),
        (None, {"measured": 2}, (False, "unknown")),
        (USAGE, None, (False, "unknown")),
    ],
)
def test_accounting_from_the_readers_provenance_labels(
    usage: UsageVector | None, labels: dict[str, int] | None, expected: tuple[bool, str]
) -> None:
    assert accounting(usage, labels) == expected


def test_claude_vector_mapping() -> None:
    split = loom_vector(Provider.CLAUDE, USAGE)
    assert split == {
        "input_tokens": 10,
        "fresh_input_tokens": 10,
        "cache_creation_input_tokens": 1,
        "cache_read_input_tokens": 10,
        "cache_write_5m_input_tokens": 1,
        "cache_write_1h_input_tokens": 0,
        "output_tokens": 5,
        "thinking_output_tokens": None,
        "resident_input_tokens": 21,
        "total_tokens": None,
    }
    # writes the reader could not split: the creation total stays, the split is unknown
    old = UsageVector(
        uncached_input=10, cache_read=0, cache_write_5m=2, cache_write_generic=3, output=1
    )
    vector = loom_vector(Provider.CLAUDE, old)
    assert vector["cache_creation_input_tokens"] == 5
    assert vector["cache_write_5m_input_tokens"] is vector["cache_write_1h_input_tokens"] is None


def test_codex_vector_mapping() -> None:
    usage = UsageVector(
        uncached_input=70, cache_read=20, cache_write_generic=5, output=30, reasoning=40
    )
    assert loom_vector(Provider.CODEX, usage) == {
        "input_tokens": 95,
        "fresh_input_tokens": 75,  # loom's fresh input is input minus cached reads
        "cache_creation_input_tokens": None,
        "cache_read_input_tokens": 20,
        "cache_write_5m_input_tokens": None,
        "cache_write_1h_input_tokens": None,
        "output_tokens": 30,
        "thinking_output_tokens": None,  # reasoning larger than output is not a measurement
        "resident_input_tokens": 95,
        "total_tokens": 125,
    }
    unknown_cached = loom_vector(Provider.CODEX, UsageVector(uncached_input=1, output=1))
    assert unknown_cached["input_tokens"] is unknown_cached["total_tokens"] is None


COUNTS = st.one_of(st.none(), st.integers(0, 10**12))


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(list(Provider)),
    st.builds(
        UsageVector,
        uncached_input=COUNTS,
        cache_read=COUNTS,
        cache_write_5m=COUNTS,
        cache_write_1h=COUNTS,
        cache_write_generic=COUNTS,
        output=COUNTS,
        reasoning=COUNTS,
    ),
)
def test_every_written_vector_satisfies_loom_relations(
    provider: Provider, usage: UsageVector
) -> None:
    vector = TokenVector.model_validate(loom_vector(provider, usage))
    assert vector_problem(provider, vector) is None


def test_quota_mapping() -> None:
    start, end = (
        _obs(T0 + timedelta(milliseconds=900), 10.0),
        _obs(T0 + timedelta(seconds=4.2), 12.0),
    )
    obs = quota_observation(Provider.CODEX, start, end, False)
    assert obs == {
        "provider": "codex",
        "window": "five-hour",
        "reset_id": "five-hour-1",
        "resets_at": int(RESET.timestamp()),
        "observed_start_at": int(T0.timestamp()),
        "observed_end_at": int(T0.timestamp()) + 4,
        "used_percent_start": 10.0,
        "used_percent_end": 12.0,
        "precision_percent": 1.0,
        "unrelated_concurrent_use": False,
        "continuity": "same-reset",
    }
    later = T0 + timedelta(seconds=4)

    def written(end: QuotaObservation, begin: QuotaObservation = start) -> dict[str, Any]:
        found = quota_observation(Provider.CLAUDE, begin, end, False)
        assert found is not None
        return found

    assert written(_obs(later, 1.0, resets_at=RESET + timedelta(hours=5)))["continuity"] == "reset"
    assert written(_obs(later, 12.0, reset_id="x"))["continuity"] == "unknown"
    assert written(_obs(later, 12.0, precision_percent=0.1))["precision_percent"] == 1.0
    zero = _obs(later, 12.0, precision_percent=0.0)
    assert written(zero, _obs(T0, 10.0, precision_percent=0.0))["precision_percent"] is None
    # what loom cannot hold is left out, never invented
    for begin, end in [
        (start, _obs(later, None)),
        (_obs(T0, 1.0, reset_id=None), _obs(later, 2.0)),
        (start, _obs(T0 + timedelta(seconds=0.95), 12.0)),  # within one whole second
        (_obs(T0, 1.0, window="other:60"), _obs(later, 2.0, window="other:60")),
    ]:
        assert quota_observation(Provider.CLAUDE, begin, end, False) is None
    assert quota_observations(Provider.CLAUDE, [start], [], False) is None
    assert quota_observations(Provider.CLAUDE, [start], [_obs(later, 11.0)], True) == [
        quota_observation(Provider.CLAUDE, start, _obs(later, 11.0), True)
    ]


def test_a_scoped_window_never_stands_in_for_the_accounts_own() -> None:
    later = T0 + timedelta(minutes=1)
    start, end = _obs(T0, 10.0, window="seven-day"), _obs(later, 11.0, window="seven-day")
    scoped = {"provider": "claude:opus", "reset_id": "seven-day-opus-1"}
    own = quota_observation(Provider.CLAUDE, start, end, False)
    assert own is not None
    # the scoped window comes after the account's in both snapshots: still the account's
    found = quota_observations(
        Provider.CLAUDE,
        [start, _obs(T0, 50.0, window="seven-day", **scoped)],
        [end, _obs(later, 70.0, window="seven-day", **scoped)],
        False,
    )
    assert found == [own]
    # only a scoped window: no account-wide observation at all (missing, not borrowed)
    only_scoped = quota_observations(
        Provider.CLAUDE,
        [_obs(T0, 50.0, window="seven-day", **scoped)],
        [_obs(later, 70.0, window="seven-day", **scoped)],
        False,
    )
    assert only_scoped is None
    # two account-wide readings of one window at an end: ambiguous, left out
    assert (
        quota_observations(
            Provider.CLAUDE, [start, _obs(T0, 30.0, window="seven-day")], [end], False
        )
        is None
    )


def test_only_claude_and_codex_can_be_written() -> None:
    assert loom_provider("codex") is Provider.CODEX
    with pytest.raises(InvalidInputError, match="only 'claude' and 'codex'"):
        loom_provider("gemini")


# section 1, as a whole: every structural rule, and the round trip

ID = re.compile(r"[A-Za-z0-9._:-]{1,160}")
RUN_IDS = ("run_id", "workload_id", "fixture_id", "source_input_revision", "source_input_digest",
           "environment_id", "acceptance_contract_digest", "implementation_revision")  # fmt: skip


def _rich_trial() -> tuple[TrialManifest, list[RunEvidence]]:
    """Two tasks x two strata x two repetitions, with the awkward cases mixed in: a run
    without usage, one with partial accounting, one without a model, one failing."""
    manifest = _manifest(
        provider="codex", effort="high", tasks=TASKS, strata=("cold", "warm"), reps=2
    )
    evidence = []
    start = T0
    for planned in manifest.planned:
        n = len(evidence)
        evidence.append(
            _evidence(
                planned.arm,
                start,
                (n, n + 1.0),
                task=planned.task_id,
                stratum=planned.stratum,
                rep=planned.repetition,
                usage=None if n == 3 else "by arm",
                labels={"measured": 1, "unknown-usage": 2} if n == 5 else None,
                model=None if n == 6 else "gpt-5-codex",
                passed=n != 7,
            )
        )
        start += timedelta(seconds=5)
    return manifest, evidence


def _walk_section_1(artifact: dict[str, Any]) -> None:
    """An independent reading of LOOM-ARTIFACT §1 over the JSON the writer produced."""
    manifest = artifact["intervention"]
    assert artifact["schema_version"] == 1 and 1 <= len(artifact["pairs"]) <= 1024
    assert all(
        ID.fullmatch(manifest[k])
        for k in ("intervention_id", "baseline_revision", "candidate_revision")
    )
    dims = manifest["changed_dimensions"]
    assert 1 <= len(dims) <= 4 and len(set(dims)) == len(dims) and "implementation-revision" in dims
    run_ids = Counter(p[a]["run_id"] for p in artifact["pairs"] for a in ("baseline", "candidate"))
    assert max(run_ids.values()) == 1
    for pair in artifact["pairs"]:
        assert ID.fullmatch(pair["work_unit_id"])
        for arm in ("baseline", "candidate"):
            run = pair[arm]
            assert all(ID.fullmatch(run[k]) for k in RUN_IDS)
            assert run["implementation_revision"] == manifest[f"{arm}_revision"]
            providers = [a["provider"] for a in run["assignments"]]
            assert providers and len(set(providers)) == len(providers)
            assert all(
                ID.fullmatch(a["model"]) and ID.fullmatch(a["effort"]) for a in run["assignments"]
            )
            checks = [(c["command_id"], c["contract_id"]) for c in run["required_checks"]]
            assert len(set(checks)) == len(checks) and all(
                ID.fullmatch(i) for c in checks for i in c
            )
            reviews = [r["dimension"] for r in run["reviewed_dimensions"]]
            assert len(set(reviews)) == len(reviews) and all(ID.fullmatch(r) for r in reviews)
            for key in (
                "required_checks",
                "reviewed_dimensions",
                "unresolved_findings",
                "omitted_requirements",
            ):
                assert len(run[key]) <= 256
            assert 0 <= run["retry_count"] <= 10_000 and 0 <= run["fix_count"] <= 10_000
            for key in ("critical_path_ms", "notification_latency_ms"):
                assert run[key] is None or (type(run[key]) is int and run[key] >= 0)
            tokens = set(run["provider_tokens"])
            assert (
                tokens == set(providers) if run["accounting_complete"] else tokens <= set(providers)
            )
            for provider, vector in run["provider_tokens"].items():
                assert all(v is None or (type(v) is int and v >= 0) for v in vector.values())
                assert (
                    vector_problem(Provider(provider), TokenVector.model_validate(vector)) is None
                )
            quota = run["quota_observations"] or []
            assert len({(q["provider"], q["window"]) for q in quota}) == len(quota)
            for q in quota:
                assert q["provider"] in providers and ID.fullmatch(q["reset_id"])
                assert (
                    q["observed_start_at"] < q["observed_end_at"]
                    and q["resets_at"] > q["observed_start_at"]
                )
                assert all(0 <= q[k] <= 100 for k in ("used_percent_start", "used_percent_end"))
                assert q["precision_percent"] is None or 0 < q["precision_percent"] <= 100


def test_the_written_artifact_satisfies_every_structural_rule_of_section_1() -> None:
    manifest, evidence = _rich_trial()
    artifact = build_artifact(manifest, evidence)
    assert len(artifact["pairs"]) == 8
    _walk_section_1(artifact)
    decoded = load_artifact(json.dumps(artifact).encode()).artifact
    assert decoded is not None
    assert artifact_findings(decoded) == ()
    duplicates = duplicate_run_ids(decoded)
    assert all(pair_findings(decoded, pair, duplicates) == () for pair in decoded.pairs)


def test_the_written_artifact_round_trips_and_is_judged_identically(tmp_path: Path) -> None:
    manifest, evidence = _rich_trial()
    artifact = build_artifact(manifest, evidence)
    path = tmp_path / "artifact.json"
    path.write_text(json.dumps(artifact, indent=2), encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8")) == artifact
    from_file = judge_file(path)
    in_memory = judge_artifact_bytes(json.dumps(artifact).encode())
    assert from_file.to_json() == in_memory.to_json()
    assert from_file.exit_code == in_memory.exit_code
    # the awkward runs show up as loom would judge them, nothing crashes or disappears
    assert len(from_file.pairs) == 8
    assert {"missing-accounting-evidence", "failed-required-check"} <= set(from_file.reason_codes)


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
