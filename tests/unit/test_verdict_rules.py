"""Rules of the verdict engine that the golden corpus does not pin to the edge.

Each test edits the golden supported artifact at one place and checks one
boundary: uncertainty arithmetic, reset edges, composites ignored, null never
zero, identifier bounds, and the precedence of structure over judgement.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pairlab.core.verdict import Verdict, VerdictReport, judge_artifact_bytes

BASE: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "compare" / "supported.json").read_text()
)


def judged(edit: Any) -> VerdictReport:
    doc = copy.deepcopy(BASE)
    edit(doc)
    return judge_artifact_bytes(json.dumps(doc).encode())


def cand(doc: dict[str, Any]) -> dict[str, Any]:
    run: dict[str, Any] = doc["pairs"][0]["candidate"]
    return run


def base(doc: dict[str, Any]) -> dict[str, Any]:
    run: dict[str, Any] = doc["pairs"][0]["baseline"]
    return run


def set_quota(
    doc: dict[str, Any], used_b: tuple[float, float], used_c: tuple[float, float], prec: float
) -> None:
    for run, used in ((base(doc), used_b), (cand(doc), used_c)):
        interval = run["quota_intervals"][0]
        interval["start"]["used_percent"], interval["end"]["used_percent"] = used
        interval["precision_percent"] = prec


@pytest.mark.parametrize(
    ("used_c", "outcome", "code"),
    [
        ((10.1, 10.8), "increase-within-uncertainty", "quota-change-within-uncertainty"),
        ((10.0, 10.8), "regression", "subscription-consumption-regression"),
        ((10.0, 10.3), "no-increase", "quota-reduction-not-established"),
        ((10.0, 10.2), "reduction", None),
    ],
)
def test_quota_delta_is_decimal_against_summed_precision(
    used_c: tuple[float, float], outcome: str, code: str | None
) -> None:
    # baseline consumes 0.5 and U = 0.1 + 0.1 = 0.2 exactly; in binary floats the first
    # case's delta would be 0.2000000000000011 and wrongly count as a regression
    report = judged(lambda d: set_quota(d, (10.1, 10.6), used_c, 0.1))
    pair = report.pairs[0]
    assert pair.quota_comparisons[0].outcome == outcome
    assert (code in pair.reasons) if code else not pair.reasons


def test_interval_ending_at_its_reset_is_a_crossing() -> None:
    def edit(doc: dict[str, Any]) -> None:
        interval = cand(doc)["quota_intervals"][0]
        interval["start"]["resets_at"] = interval["end"]["resets_at"] = interval["end"][
            "observed_at"
        ]
        base(doc)["quota_intervals"][0]["start"]["resets_at"] = interval["end"]["observed_at"]
        base(doc)["quota_intervals"][0]["end"]["resets_at"] = interval["end"]["observed_at"]

    pair = judged(edit).pairs[0]
    assert pair.quota_comparisons[0].reason == "quota-reset-crossing"
    assert pair.subscription_verdict is Verdict.INCONCLUSIVE


def test_a_regression_rejects_even_when_a_window_is_missing() -> None:
    def edit(doc: dict[str, Any]) -> None:
        set_quota(doc, (10, 12), (10, 14), 0.5)
        extra = copy.deepcopy(base(doc)["quota_intervals"][0])
        extra["window"] = "seven-day"
        base(doc)["quota_intervals"].append(extra)

    report = judged(edit)
    assert report.exit_code == 1
    assert {"missing-quota-window", "subscription-consumption-regression"} <= set(
        report.reason_codes
    )


def test_composites_are_never_compared() -> None:
    def edit(doc: dict[str, Any]) -> None:
        dims = cand(doc)["token_vectors"][0]["dimensions"]
        dims["total"] = 10**12
        dims["cache_creation_total"] = 10**12

    assert judged(edit).token_proxy_verdict is Verdict.SUPPORTED


def test_null_dimension_is_missing_not_a_decrease_from_zero() -> None:
    def edit(doc: dict[str, Any]) -> None:
        base(doc)["token_vectors"][0]["dimensions"]["cache_write_1h"] = 0
        del cand(doc)["token_vectors"][0]["dimensions"]["cache_write_1h"]

    report = judged(edit)
    assert report.pairs[0].token_proxy_verdict is Verdict.INCONCLUSIVE
    assert "missing-token-dimension" in report.pairs[0].reasons
    assert report.exit_code == 0  # the proxy never sets the exit code


def test_incomparable_pair_is_never_supported_but_can_be_rejected_on_quality() -> None:
    def undeclared_model(doc: dict[str, Any]) -> None:
        cand(doc)["assignments"][0]["model"] = "claude-opus-4-1"

    report = judged(undeclared_model)
    assert report.pairs[0].verdict is Verdict.INCONCLUSIVE
    assert report.pairs[0].quality_verdict is Verdict.SUPPORTED
    assert report.exit_code == 2

    def also_failed(doc: dict[str, Any]) -> None:
        undeclared_model(doc)
        cand(doc)["omitted_requirements"] = ["REQ-1"]

    assert judged(also_failed).exit_code == 1


def test_incomparable_subscription_regression_does_not_reject() -> None:
    def edit(doc: dict[str, Any]) -> None:
        cand(doc)["environment_id"] = "env-other"
        set_quota(doc, (10, 11), (10, 15), 0.5)

    report = judged(edit)
    assert "subscription-consumption-regression" in report.reason_codes
    assert report.pairs[0].subscription_verdict is Verdict.INCONCLUSIVE
    assert report.exit_code == 2


def test_structural_failure_outranks_a_rejection() -> None:
    def edit(doc: dict[str, Any]) -> None:
        cand(doc)["acceptance"]["accepted"] = False
        doc["pairs"][1]["baseline"]["run_id"] = base(doc)["run_id"]

    report = judged(edit)
    assert report.exit_code == 2
    assert report.reason_codes == ["duplicate-run-id"]


@pytest.mark.parametrize(
    ("value", "ok"),
    [("a" * 160, True), ("a" * 161, False), ("sha256:ab.c_d-e", True), ("é", False),
     ("a/b", False), ("a\\b", False), ("..", False), ("", False), ("a\n", False)],
)  # fmt: skip
def test_identifier_bounds(value: str, ok: bool) -> None:
    report = judged(lambda d: d["pairs"][0].__setitem__("work_unit_id", value))
    assert (report.exit_code == 0) is ok
    if not ok:
        assert report.reason_codes == ["invalid-identifier"]


@pytest.mark.parametrize("version", [True, 1.0, "1", 2, None])
def test_only_integer_one_is_a_supported_schema_version(version: object) -> None:
    report = judged(lambda d: d.__setitem__("schema_version", version))
    assert report.reason_codes == ["unsupported-schema-version"]


def test_latency_equal_is_not_a_regression() -> None:
    def edit(doc: dict[str, Any]) -> None:
        cand(doc)["latency"] = dict(base(doc)["latency"])

    assert judged(edit).exit_code == 0
