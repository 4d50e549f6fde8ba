"""Study plans: schema, default, hash, frozen plan, and the labels the plan's rule gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pairlab.core.analysis.decisions import DECISIONS, REASONS, ROLES, label_effects
from pairlab.core.analysis.metrics import METRICS, Contrast
from pairlab.core.analysis.study_plan import (
    ResolvedPlan,
    StudyPlan,
    check_unchanged,
    default_plan,
    frozen_plan_bytes,
    load_plan_file,
    parse_plan,
    read_frozen_plan,
    resolve_plan,
)
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.quota.consumption import QUOTA_METRICS

PLAN_YAML = """\
schema_version: 1
id: core-2026-q4
description: totalTokens on full vs baseline, powered for a 10% saving
alpha: 0.05
min_pairs: 12
primary_metric: totalTokens
primary_contrasts: [full-vs-baseline]
secondary_metrics: [outputTokens, latencyMs, apiListPriceUsd]
secondary_correction: bh
power: {effect: "-10%", power: 0.8, pilot: pilot-run-1}
"""


def test_a_plan_file_is_read_and_validated(tmp_path: Path) -> None:
    path = tmp_path / "core.plan.yaml"
    path.write_text(PLAN_YAML)
    plan = load_plan_file(path)
    assert plan.min_pairs == 12 and plan.primary_contrasts == ["full-vs-baseline"]
    assert plan.primary_metric_of("full-vs-baseline") == "totalTokens"
    assert plan.primary_metric_of("optimizer-vs-baseline") is None
    assert plan.secondary_correction == "bh" and plan.power is not None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"primary_metric": "tokens"}, "unknown metric"),
        ({"primary_contrasts": ["full-vs-optimizer"]}, "unknown contrast"),
        ({"primary_contrasts": []}, "at least one primary contrast"),
        ({"min_pairs": 1}, "min_pairs"),
        ({"alpha": 0.5}, "alpha"),
        ({"secondary_correction": "bonferroni"}, "secondary_correction"),
        ({"primary_metric_by_contrast": {"full-vs-retrieval": "latencyMs"}}, "not primary"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_an_invalid_plan_is_refused_with_its_reason(change: dict[str, Any], message: str) -> None:
    data = {"id": "p", "min_pairs": 8, **change}
    with pytest.raises(InvalidInputError) as info:
        parse_plan(data, "plan.yaml")
    assert info.value.reason == ReasonCode.INVALID_PLAN and message in info.value.message


def test_an_unknown_schema_version_is_refused() -> None:
    with pytest.raises(InvalidInputError) as info:
        parse_plan({"schema_version": 2, "id": "p", "min_pairs": 8}, "plan.yaml")
    assert info.value.reason == ReasonCode.UNSUPPORTED_SCHEMA_VERSION


def test_resolution_order_and_the_default_plan(tmp_path: Path) -> None:
    suite_plan = tmp_path / "suite.plan.yaml"
    assert resolve_plan(None, suite_plan, 7).source == "default"
    default = resolve_plan(None, suite_plan, 7).plan
    assert default == default_plan(7) and default.min_pairs == 7
    assert default.primary_contrasts == [
        "optimizer-vs-baseline",
        "retrieval-vs-baseline",
        "full-vs-baseline",
    ]
    # every metric secondary: the token metrics and the subscription windows' consumption
    assert default.secondary_metrics == [*METRICS, *QUOTA_METRICS]
    suite_plan.write_text(PLAN_YAML)
    assert resolve_plan(None, suite_plan, 7).plan.id == "core-2026-q4"
    other = tmp_path / "other.yaml"
    other.write_text(PLAN_YAML.replace("min_pairs: 12", "min_pairs: 20"))
    resolved = resolve_plan(other, suite_plan, 7)
    assert resolved.plan.min_pairs == 20 and resolved.path == str(other)


def test_the_hash_is_canonical_and_the_frozen_plan_round_trips(tmp_path: Path) -> None:
    a = StudyPlan(id="p", min_pairs=8, secondary_metrics=["latencyMs", "toolCalls"])
    b = StudyPlan.model_validate(
        {"secondary_metrics": ["latencyMs", "toolCalls"], "min_pairs": 8, "id": "p"}
    )
    assert a.sha256() == b.sha256()
    assert StudyPlan(id="p", min_pairs=9).sha256() != StudyPlan(id="p", min_pairs=8).sha256()
    resolved = ResolvedPlan.of(a, "file", "x.yaml")
    path = tmp_path / "plan.json"
    path.write_bytes(frozen_plan_bytes(resolved))
    assert read_frozen_plan(path) == resolved
    # Edited after the run started: the recorded hash no longer matches.
    payload = json.loads(path.read_text())
    payload["plan"]["min_pairs"] = 3
    path.write_text(json.dumps(payload))
    with pytest.raises(InvalidInputError) as info:
        read_frozen_plan(path)
    assert info.value.reason == ReasonCode.PLAN_CHANGED


def test_a_changed_plan_is_refused_naming_what_changed() -> None:
    frozen = ResolvedPlan.of(default_plan(5), "default")
    check_unchanged(frozen, ResolvedPlan.of(default_plan(5), "default"), "r1")
    with pytest.raises(InvalidInputError) as info:
        check_unchanged(frozen, ResolvedPlan.of(default_plan(8), "default"), "r1")
    assert info.value.reason == ReasonCode.PLAN_CHANGED and info.value.exit_code == 2
    assert "min_pairs" in info.value.message and "r1" in info.value.message


CONTRASTS = [Contrast("optimizer", "baseline"), Contrast("full", "baseline")]
TOTAL, LATENCY, TOOLS = (METRICS.index(m) for m in ("totalTokens", "latencyMs", "toolCalls"))


def labels(
    plan: StudyPlan,
    p_sav: np.ndarray,
    *,
    n: int = 10,
    holds: bool = True,
    graded: bool = True,
    pct_high: float = 1.0,
    gate: int = 5,
):  # type: ignore[no-untyped-def]
    shape = (1, len(CONTRASTS), len(METRICS))
    p_sav = np.broadcast_to(p_sav, shape).astype(float)
    return label_effects(
        plan,
        CONTRASTS,
        gate=gate,
        n=np.full(shape, n),
        p_saving=p_sav,
        p_increase=1.0 - p_sav,
        percentile_high=np.full(shape, pct_high),
        correctness_holds=np.full(shape[:2], holds),
        graded=np.full(shape[:2], graded),
    )


def at(result: Any, j: int, i: int) -> tuple[str, str, str]:
    return (
        ROLES[result.role[0, j, i]],
        DECISIONS[result.decision[0, j, i]],
        REASONS[result.reason[0, j, i]],
    )


def test_roles_and_wins_follow_the_plan() -> None:
    plan = StudyPlan(
        id="p", min_pairs=5, primary_contrasts=["full-vs-baseline"], secondary_metrics=["latencyMs"]
    )
    p = np.full((1, 2, len(METRICS)), 0.5)
    p[0, 1, TOTAL] = 0.001  # primary: full vs baseline totalTokens
    p[0, 0, TOTAL] = 0.001  # the primary metric on a non-primary contrast: not in the plan here
    p[0, 1, LATENCY] = 1e-6
    got = labels(plan, p)
    assert at(got, 1, TOTAL) == ("primary", "primary-win", "")
    assert at(got, 0, TOTAL) == ("descriptive", "not-tested", "")
    assert at(got, 1, LATENCY) == ("secondary", "secondary-win", "")
    assert at(got, 0, LATENCY) == ("secondary", "no-evidence", "")
    assert at(got, 1, TOOLS) == ("descriptive", "not-tested", "")
    assert got.win.sum() == 2
    # two-sided 2e-6, Holm across the 2 secondary tests: x 2.
    assert got.p_adjusted[0, 1, LATENCY] == pytest.approx(4e-6)


def test_each_reason_for_a_saving_that_is_not_a_win() -> None:
    plan = default_plan(5)
    # Significant alone, but 24 secondary tests: Holm multiplies by ~23.
    p = np.full((1, 2, len(METRICS)), 0.5)
    p[0, 0, LATENCY] = 0.004
    got = labels(plan, p)
    assert at(got, 0, LATENCY) == ("secondary", "no-evidence", "adjusted-threshold")
    # Only the reported percentile interval excludes zero.
    got = labels(plan, np.full((1, 2, len(METRICS)), 0.2), pct_high=-1.0)
    assert at(got, 0, TOTAL)[1:] == ("no-evidence", "decision-interval")
    # A significant saving with correctness regressed, or never graded.
    p = np.full((1, 2, len(METRICS)), 1e-6)
    assert at(labels(plan, p, holds=False), 0, TOTAL)[1:] == (
        "no-evidence",
        "correctness-regressed",
    )
    assert at(labels(plan, p, holds=False, graded=False), 0, TOTAL)[1:] == (
        "no-evidence",
        "correctness-unproven",
    )
    # Exploratory: the gate (3) lets 4 pairs through, the plan pre-registered 5.
    assert at(labels(plan, p, n=4, gate=3), 0, TOTAL)[1:] == ("no-evidence", "below-gate")
    # Below the gate: no interval.
    assert at(labels(plan, np.full((1, 2, len(METRICS)), np.nan), n=4), 0, TOTAL)[1:] == (
        "insufficient",
        "too-few-pairs",
    )
    assert at(labels(plan, np.full((1, 2, len(METRICS)), np.nan), n=0), 0, TOTAL)[1:] == (
        "insufficient",
        "not-observed",
    )


def test_an_increase_is_a_regression_whatever_correctness_says() -> None:
    p = np.full((1, 2, len(METRICS)), 1.0 - 1e-6)  # p_increase = 1e-6
    got = labels(default_plan(5), p, holds=False)
    assert at(got, 0, TOTAL) == ("primary", "regression", "")
    assert not got.win.any()
