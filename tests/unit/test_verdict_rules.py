"""Rules of the verdict engine that the golden corpus does not pin to the edge.

Each test edits the golden supported artifact (two Claude pairs) at one place
and checks one boundary of loom's schema or algorithm (LOOM-ARTIFACT §1-4):
decoding (types, integers, duplicate keys, optional = absent or null),
structure (identifiers, list bounds, vector relations, quota bounds), pair-level
failures that keep the other pairs judged, and the quota arithmetic.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pairlab.core.verdict import Verdict, VerdictReport, judge_artifact_bytes

Doc = dict[str, Any]
BASE: Doc = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "compare" / "supported.json").read_text()
)


def judged(edit: Callable[[Doc], Any]) -> VerdictReport:
    doc = copy.deepcopy(BASE)
    edit(doc)
    return judge_artifact_bytes(json.dumps(doc).encode())


def cand(doc: Doc) -> Doc:
    run: Doc = doc["pairs"][0]["candidate"]
    return run


def base(doc: Doc) -> Doc:
    run: Doc = doc["pairs"][0]["baseline"]
    return run


def codes(report: VerdictReport) -> list[str]:
    return report.reason_codes


# decoding: anything that does not decode into loom's types is malformed-input


@pytest.mark.parametrize(
    ("field", "value"),
    [("critical_path_ms", 900.0), ("critical_path_ms", -1), ("critical_path_ms", True),
     ("retry_count", 2**32), ("accepted", 1), ("semantic_completion", "PASSED"),
     ("fixture_id", 7), ("accounting_provenance", "measured-canonical")],
)  # fmt: skip
def test_wrong_types_and_integer_ranges_are_malformed(field: str, value: object) -> None:
    report = judged(lambda d: cand(d).__setitem__(field, value))
    assert (report.exit_code, codes(report), report.pairs) == (2, ["malformed-input"], ())


@pytest.mark.parametrize(("version", "code"), [
    (2, "unsupported-schema-version"), (True, "malformed-input"), (1.0, "malformed-input"),
    ("1", "malformed-input"), (None, "malformed-input"), (70_000, "malformed-input"),
])  # fmt: skip
def test_schema_version_is_decoded_as_u16_before_it_is_checked(version: object, code: str) -> None:
    assert codes(judged(lambda d: d.__setitem__("schema_version", version))) == [code]


def test_type_errors_win_over_the_version_check() -> None:
    def edit(doc: Doc) -> None:
        doc["schema_version"] = 2
        cand(doc)["raw_prompt"] = "x"

    assert codes(judged(edit)) == ["malformed-input"]


def test_repeated_field_is_malformed_but_a_repeated_token_map_key_takes_the_last() -> None:
    text = json.dumps(BASE)
    repeated_field = text.replace('"fix_count": 1', '"fix_count": 1, "fix_count": 1', 1)
    assert codes(judge_artifact_bytes(repeated_field.encode())) == ["malformed-input"]
    first = '"provider_tokens": {"claude": {'
    repeated_key = text.replace(first, '"provider_tokens": {"claude": {}, "claude": {', 1)
    assert judge_artifact_bytes(repeated_key.encode()).exit_code == 0  # a serde map: last wins


@pytest.mark.parametrize(
    "data",
    [
        b'{"schema_version": NaN}',
        json.dumps(BASE).replace("10.0", "1e400").encode(),
        json.dumps(BASE).replace("F-12", "\\ud800").encode(),
        json.dumps(BASE).encode("utf-16"),
        b"\xef\xbb\xbf" + json.dumps(BASE).encode(),
    ],
    ids=["nan", "overflowing-number", "lone-surrogate", "utf-16", "bom"],
)
def test_non_json_numbers_and_non_utf8_text_are_malformed(data: bytes) -> None:
    assert codes(judge_artifact_bytes(data)) == ["malformed-input"]


def test_optional_fields_may_be_absent_or_null_and_mean_unknown() -> None:
    for missing in (lambda r: r.pop("accepted"), lambda r: r.__setitem__("accepted", None)):
        assert codes(judged(lambda d, m=missing: m(cand(d)))) == ["missing-quality-evidence"]
    assert codes(judged(lambda d: cand(d).pop("quota_observations"))) == ["missing-quota-telemetry"]
    report = judged(lambda d: cand(d)["quota_observations"][0].pop("precision_percent"))
    assert codes(report) == ["unknown-quota-precision"]
    report = judged(lambda d: cand(d)["provider_tokens"]["claude"].pop("output_tokens"))
    assert codes(report) == ["missing-token-dimension"]
    # a required field is never optional
    assert codes(judged(lambda d: cand(d).pop("retry_count"))) == ["malformed-input"]


# structure: a pair-level failure keeps the pair in the report and the others judged


@pytest.mark.parametrize(
    ("value", "ok"),
    [("a" * 160, True), ("a" * 161, False), ("sha256:ab.c_d-e", True), ("..", True),
     ("é", False), ("a/b", False), ("a\\b", False), ("a b", False), ("a@b", False),
     ("", False), ("a\n", False)],
)  # fmt: skip
def test_identifier_rule(value: str, ok: bool) -> None:
    report = judged(lambda d: d["pairs"][0].__setitem__("work_unit_id", value))
    assert (report.exit_code == 0) is ok
    if not ok:
        assert codes(report) == ["incomparable-pair", "invalid-identifier"]
        assert report.to_json()["pairs"][0]["work_unit_id"] == "invalid-work-unit"  # type: ignore[index]
        assert report.pairs[1].verdict is Verdict.SUPPORTED


def test_invalid_pair_is_still_rejected_on_quality_and_others_are_judged() -> None:
    def edit(doc: Doc) -> None:
        cand(doc)["accepted"] = False
        doc["pairs"][1]["baseline"]["run_id"] = base(doc)["run_id"]

    report = judged(edit)
    assert report.exit_code == 1
    assert [p.verdict for p in report.pairs] == [Verdict.REJECTED, Verdict.INCONCLUSIVE]
    assert codes(report) == ["candidate-not-accepted", "duplicate-run-id", "incomparable-pair"]


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        (lambda r: r.__setitem__("reviewed_dimensions", [
            {"dimension": d, "independent": True, "verdict": "passed"}
            for d in ["correctness", "scope", *(f"d{i}" for i in range(255))]
        ]), "evidence-limit-exceeded"),
        (lambda r: r.__setitem__("fix_count", 10_001), "evidence-limit-exceeded"),
        (lambda r: r["assignments"][0].__setitem__("effort", "x/y"), "invalid-identifier"),
        (lambda r: r["required_checks"].append(
            {"command_id": "x y", "contract_id": "c", "verdict": "passed"}
        ), "invalid-identifier"),
        (lambda r: r["provider_tokens"].clear(), "provider-evidence-mismatch"),
        (lambda r: r["provider_tokens"]["claude"].__setitem__("thinking_output_tokens", 3901),
         "invalid-token-vector"),
        (lambda r: r["provider_tokens"]["claude"].__setitem__("input_tokens", 2501),
         "invalid-token-vector"),
        (lambda r: r["provider_tokens"]["claude"].__setitem__("cache_creation_input_tokens", 9001),
         "invalid-token-vector"),
        (lambda r: r["quota_observations"][0].__setitem__("used_percent_end", 100.5),
         "invalid-quota-observation"),
        (lambda r: r["quota_observations"][0].__setitem__("precision_percent", 0.0),
         "invalid-quota-observation"),
        (lambda r: r["quota_observations"][0].__setitem__("resets_at", 1_772_447_400),
         "invalid-quota-observation"),
        (lambda r: r["quota_observations"][0].__setitem__("reset_id", "a b"),
         "invalid-quota-observation"),
    ],
    ids=["257-reviews", "fix-count", "effort-id", "contract-id", "complete-without-vector",
         "thinking-over-output", "input-not-fresh", "split-not-creation", "percent-over-100",
         "zero-precision", "reset-at-start", "reset-id"],
)  # fmt: skip
def test_structural_rules(edit: Callable[[Doc], Any], code: str) -> None:
    report = judged(lambda d: edit(cand(d)))
    assert codes(report) == sorted([code, "incomparable-pair"])
    assert report.pairs[0].verdict is Verdict.INCONCLUSIVE
    assert report.pairs[1].verdict is Verdict.SUPPORTED


def test_incomplete_accounting_may_carry_a_subset_of_vectors() -> None:
    def edit(doc: Doc) -> None:
        cand(doc).update(accounting_complete=False, accounting_provenance="partial")
        cand(doc)["provider_tokens"].clear()

    report = judged(edit)
    assert codes(report) == ["missing-accounting-evidence"] and report.exit_code == 0


def test_codex_vector_relations() -> None:
    def with_codex(total: int) -> Callable[[Doc], None]:
        def edit(doc: Doc) -> None:
            cand(doc)["assignments"].append({"provider": "codex", "model": "m", "effort": "e"})
            cand(doc)["provider_tokens"]["codex"] = {
                "input_tokens": 120, "fresh_input_tokens": 100, "cache_read_input_tokens": 20,
                "resident_input_tokens": 120, "output_tokens": 30, "total_tokens": total,
            }  # fmt: skip

        return edit

    assert "invalid-token-vector" not in codes(judged(with_codex(150)))
    assert "invalid-token-vector" in codes(judged(with_codex(151)))


@pytest.mark.parametrize(
    ("dims", "revisions_equal", "code"),
    [([], False, "invalid-intervention-manifest"),
     (["implementation-revision"] * 2, False, "invalid-intervention-manifest"),
     (["model-assignment"], True, None)],
)  # fmt: skip
def test_intervention_manifest(dims: list[str], revisions_equal: bool, code: str | None) -> None:
    def edit(doc: Doc) -> None:
        doc["intervention"]["changed_dimensions"] = dims
        if revisions_equal:
            doc["intervention"]["candidate_revision"] = doc["intervention"]["baseline_revision"]
            for pair in doc["pairs"]:
                pair["candidate"]["implementation_revision"] = doc["intervention"][
                    "baseline_revision"
                ]

    report = judged(edit)
    assert codes(report) == ([code] if code else [])
    assert (report.pairs == ()) is (code is not None)


def test_whole_artifact_failures_are_reported_together() -> None:
    def edit(doc: Doc) -> None:
        doc["intervention"]["intervention_id"] = "a/b"
        doc["intervention"]["changed_dimensions"] = []
        doc["pairs"] = []

    assert codes(judged(edit)) == [
        "invalid-identifier",
        "invalid-intervention-manifest",
        "no-comparison-pairs",
    ]


# comparability, quality, latency, token proxy


def test_incomparable_pair_is_never_supported_but_can_be_rejected_on_quality() -> None:
    def undeclared_model(doc: Doc) -> None:
        cand(doc)["assignments"][0]["model"] = "claude-opus-4-1"

    report = judged(undeclared_model)
    assert report.pairs[0].verdict is Verdict.INCONCLUSIVE
    assert report.pairs[0].quality is not None
    assert report.pairs[0].quality.verdict is Verdict.SUPPORTED
    assert report.exit_code == 2

    def also_failed(doc: Doc) -> None:
        undeclared_model(doc)
        cand(doc)["omitted_requirements"] = ["REQ-1"]

    assert judged(also_failed).exit_code == 1


def test_incomparable_pair_is_not_judged_on_quota_but_its_evidence_is_echoed() -> None:
    def edit(doc: Doc) -> None:
        cand(doc)["environment_id"] = "env-other"
        cand(doc)["quota_observations"][0]["used_percent_end"] = 30.0

    report = judged(edit)
    assert "subscription-consumption-regression" not in codes(report)
    assert report.pairs[0].subscription_verdict is Verdict.INCONCLUSIVE
    assert report.pairs[0].quota_comparisons[0].to_json()["candidate_consumption_percent"] == 16.0
    assert report.exit_code == 2


def test_findings_report_only_the_first_offending_finding() -> None:
    def edit(doc: Doc) -> None:
        cand(doc)["unresolved_findings"] = [
            {"finding_id": "F-12", "severity": "critical"},
            {"finding_id": "F-99", "severity": "low"},
        ]

    assert codes(judged(edit)) == ["worsened-unresolved-finding"]


def test_a_failed_check_outranks_an_unknown_one() -> None:
    def edit(doc: Doc) -> None:
        cand(doc)["required_checks"][0]["verdict"] = "unknown"
        cand(doc)["required_checks"][1]["verdict"] = "failed"

    assert codes(judged(edit)) == ["failed-required-check"]


def test_latency_equal_is_not_a_regression() -> None:
    def edit(doc: Doc) -> None:
        cand(doc)["critical_path_ms"] = base(doc)["critical_path_ms"]
        cand(doc)["notification_latency_ms"] = base(doc)["notification_latency_ms"]

    assert judged(edit).exit_code == 0


def test_composites_are_never_compared() -> None:
    def edit(doc: Doc) -> None:
        vector = cand(doc)["provider_tokens"]["claude"]
        vector["thinking_output_tokens"] = vector["output_tokens"]  # thinking rose; not compared

    assert judged(edit).token_proxy_verdict is Verdict.SUPPORTED


def test_null_dimension_is_missing_not_a_decrease_from_zero() -> None:
    def edit(doc: Doc) -> None:
        base(doc)["provider_tokens"]["claude"]["cache_write_1h_input_tokens"] = 0
        cand(doc)["provider_tokens"]["claude"]["cache_write_1h_input_tokens"] = None

    report = judged(edit)
    assert report.pairs[0].token_proxy_verdict is Verdict.INCONCLUSIVE
    assert codes(report) == ["missing-token-dimension"]
    assert report.exit_code == 0  # the proxy never sets the exit code


# quota: durations are exact; reasons are loom's


def _slot(doc: Doc, arm: str, start: int, end: int) -> None:
    q = doc["pairs"][0][arm]["quota_observations"][0]
    q["observed_start_at"], q["observed_end_at"] = start, end


@pytest.mark.parametrize(("length", "mismatch"), [(1_200, False), (1_201, True), (1_199, True)])
def test_interval_durations_must_be_equal_to_the_second(length: int, mismatch: bool) -> None:
    t0 = BASE["pairs"][0]["candidate"]["quota_observations"][0]["observed_start_at"]
    report = judged(lambda d: _slot(d, "candidate", t0, t0 + length))
    assert (codes(report) == ["quota-interval-mismatch"]) is mismatch


def test_interval_ending_at_its_reset_is_a_crossing() -> None:
    def edit(doc: Doc) -> None:
        for arm in ("baseline", "candidate"):
            q = doc["pairs"][0][arm]["quota_observations"][0]
            q["resets_at"] = cand(doc)["quota_observations"][0]["observed_end_at"]

    report = judged(edit)
    assert codes(report) == ["quota-reset-crossing"]
    assert report.pairs[0].subscription_verdict is Verdict.INCONCLUSIVE


@pytest.mark.parametrize("continuity", ["initial", "reset", "unknown"])
def test_only_same_reset_continuity_is_comparable(continuity: str) -> None:
    report = judged(
        lambda d: base(d)["quota_observations"][0].__setitem__("continuity", continuity)
    )
    assert codes(report) == ["quota-reset-crossing"]


def test_a_missing_window_stops_the_quota_comparison() -> None:
    """loom: different (provider, window) sets are inconclusive before any interval is
    judged, so a regression in the shared window is not reached (but still echoed)."""

    def edit(doc: Doc) -> None:
        cand(doc)["quota_observations"][0]["used_percent_end"] = 30.0
        extra = copy.deepcopy(base(doc)["quota_observations"][0])
        extra.update(window="seven-day", reset_id="claude:seven-day:r")
        base(doc)["quota_observations"].append(extra)

    report = judged(edit)
    assert (report.exit_code, codes(report)) == (2, ["missing-quota-window"])
    assert [q.key[1] for q in report.pairs[0].quota_comparisons] == ["five-hour"]


def test_quota_reasons_from_every_interval_are_kept() -> None:
    def edit(doc: Doc) -> None:
        for arm in ("baseline", "candidate"):
            q = copy.deepcopy(doc["pairs"][0][arm]["quota_observations"][0])
            q.update(window="seven-day", reset_id="claude:seven-day:r", resets_at=1_772_928_000)
            doc["pairs"][0][arm]["quota_observations"].append(q)
        cand(doc)["quota_observations"][0]["used_percent_end"] = 30.0  # five-hour regresses
        cand(doc)["quota_observations"][1]["continuity"] = "unknown"  # seven-day not evaluable

    report = judged(edit)
    assert report.pairs[0].subscription_verdict is Verdict.REJECTED
    assert codes(report) == ["quota-reset-crossing", "subscription-consumption-regression"]
