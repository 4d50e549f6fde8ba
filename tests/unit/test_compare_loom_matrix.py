"""loom's own test scenarios (LOOM-ARTIFACT.md §5), through the real ``pairlab compare`` CLI.

Like loom's integration tests, each scenario writes a mutated artifact, runs
the installed console script with ``--json`` in a subprocess and checks the
process's exit code, the three verdicts, the reason codes and the pair
evidence loom echoes (token maps with all ten fields, quota comparisons).
The base artifact is loom's scenario base as LOOM-ARTIFACT describes it: one
Claude pair, tokens 100/30/20/10/20/40 → 90/20/20/5/15/35 (fresh, cache
creation, cache read, 5m, 1h, output), quota use 4.0 → 2.0 points at
precision 0.25 each, latency 1000/100 → 900/90 ms.

No scenario of loom's matrix meets one of pairlab's documented departures
(docs/compare-artifact.md); the last tests show the two departures on their
own artifacts, asserting pairlab's answer and stating loom's.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pairlab.cli.compare import SELECTION_FLAGS
from tests.support import compare_cases, run_pairlab

Doc = dict[str, Any]
TOKEN_FIELDS = (
    "input_tokens",
    "fresh_input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "cache_write_5m_input_tokens",
    "cache_write_1h_input_tokens",
    "output_tokens",
    "thinking_output_tokens",
    "resident_input_tokens",
    "total_tokens",
)


CASES = compare_cases()  # the golden generator's loom vector builders


def claude(fresh: int, read: int, w5: int, w1: int, out: int) -> Doc:
    vector: Doc = CASES.claude_vector(fresh, read, w5, w1, out)
    return vector


def codex(fresh: int, cached: int, out: int) -> Doc:
    vector: Doc = CASES.codex_vector(fresh, cached, out)
    return vector


def quota(provider: str, window: str, start: int, used: tuple[float, float]) -> Doc:
    return {
        "provider": provider,
        "window": window,
        "reset_id": f"{provider}-{window}-r1",
        "resets_at": 9_000,
        "observed_start_at": start,
        "observed_end_at": start + 300,
        "used_percent_start": used[0],
        "used_percent_end": used[1],
        "precision_percent": 0.25,
        "unrelated_concurrent_use": False,
        "continuity": "same-reset",
    }


def run(arm: str) -> Doc:
    baseline = arm == "baseline"
    return {
        "run_id": f"{arm}-run",
        "workload_id": "wl-a",
        "fixture_id": "fx-a",
        "source_input_revision": "src-1",
        "source_input_digest": "sha256:aa11",
        "environment_id": "env-x86",
        "acceptance_contract_digest": "sha256:bb22",
        "implementation_revision": "rev-base" if baseline else "rev-cand",
        "assignments": [{"provider": "claude", "model": "claude-opus", "effort": "high"}],
        "accepted": True,
        "required_checks": [{"command_id": "tests", "contract_id": "c-1", "verdict": "passed"}],
        "reviewed_dimensions": [
            {"dimension": "correctness", "independent": True, "verdict": "passed"}
        ],
        "unresolved_findings": [],
        "omitted_requirements": [],
        "retry_count": 0,
        "fix_count": 0,
        "semantic_completion": "passed",
        "critical_path_ms": 1000 if baseline else 900,
        "notification_latency_ms": 100 if baseline else 90,
        "accounting_complete": True,
        "accounting_provenance": "measured",
        "provider_tokens": {
            "claude": claude(100, 20, 10, 20, 40) if baseline else claude(90, 20, 5, 15, 35)
        },
        "quota_observations": [
            quota("claude", "five-hour", 1000, (10.0, 14.0))
            if baseline
            else quota("claude", "five-hour", 2000, (20.0, 22.0))
        ],
    }


def base() -> Doc:
    return {
        "schema_version": 1,
        "intervention": {
            "intervention_id": "iv-polling",
            "baseline_revision": "rev-base",
            "candidate_revision": "rev-cand",
            "changed_dimensions": ["implementation-revision"],
        },
        "pairs": [
            {"work_unit_id": "wu-1", "baseline": run("baseline"), "candidate": run("candidate")}
        ],
    }


def cand(doc: Doc) -> Doc:
    run_doc: Doc = doc["pairs"][0]["candidate"]
    return run_doc


def no_quota(doc: Doc) -> None:
    doc["pairs"][0]["baseline"]["quota_observations"] = None
    cand(doc)["quota_observations"] = None


def to_codex(doc: Doc) -> None:
    doc["intervention"]["changed_dimensions"] = [
        "implementation-revision",
        "provider-assignment",
        "model-assignment",
    ]
    cand(doc)["assignments"] = [{"provider": "codex", "model": "gpt-5-codex", "effort": "high"}]
    cand(doc)["provider_tokens"] = {"codex": codex(70, 20, 35)}
    no_quota(doc)


def tradeoff(doc: Doc) -> None:
    cand(doc)["provider_tokens"]["claude"] = claude(80, 20, 5, 15, 50)
    no_quota(doc)


def coarse(doc: Doc) -> None:
    doc["pairs"][0]["baseline"]["quota_observations"][0]["precision_percent"] = 1.0
    cand(doc)["quota_observations"][0].update(used_percent_end=24.0, precision_percent=1.0)


def missing_telemetry(doc: Doc) -> None:
    cand(doc).update(
        critical_path_ms=None,
        accounting_complete=False,
        accounting_provenance="partial",
        quota_observations=None,
    )


def averaged(doc: Doc) -> None:
    cand(doc)["notification_latency_ms"] = 80
    second = copy.deepcopy(doc["pairs"][0])
    second["work_unit_id"] = "wu-2"
    second["baseline"]["run_id"] = "baseline-run-2"
    second["candidate"]["run_id"] = "candidate-run-2"
    second["candidate"]["notification_latency_ms"] = 110
    doc["pairs"].append(second)


def mixed_windows(doc: Doc) -> None:
    """Claude and Codex: Claude's candidate precision unknown; Codex 7d use 10 → 15."""
    for arm, start, used, fresh in (
        ("baseline", 1000, (10.0, 20.0), 80),
        ("candidate", 2000, (30.0, 45.0), 75),
    ):
        r = doc["pairs"][0][arm]
        r["assignments"].append({"provider": "codex", "model": "gpt-5-codex", "effort": "high"})
        r["provider_tokens"]["codex"] = codex(fresh, 20, 20)
        r["quota_observations"].append(quota("codex", "seven-day", start, used))
    cand(doc)["quota_observations"][0]["precision_percent"] = None


def setter(field: str, value: Any) -> Callable[[Doc], None]:
    return lambda doc: cand(doc).__setitem__(field, value)


S, R, N = "supported-candidate", "rejected", "inconclusive"
# name: (mutation, exit, (verdict, token proxy, subscription), reason codes)
MATRIX: dict[str, tuple[Callable[[Doc], None], int, tuple[str, str, str], list[str]]] = {
    "valid": (lambda doc: None, 0, (S, S, S), []),
    "cross-provider-transfer": (
        to_codex, 2, (N, N, N), ["cross-provider-transfer", "missing-quota-telemetry"]
    ),
    "output-increase-input-decrease": (
        tradeoff, 2, (N, N, N), ["missing-quota-telemetry", "token-dimension-tradeoff"]
    ),
    "reset-crossing": (
        lambda doc: cand(doc)["quota_observations"][0].__setitem__("reset_id", "reset-b"),
        2, (N, S, N), ["quota-reset-crossing"],
    ),
    "coarse-quota": (coarse, 2, (N, S, N), ["quota-change-within-uncertainty"]),
    "missing-telemetry": (
        missing_telemetry, 2, (N, N, N),
        ["missing-accounting-evidence", "missing-latency-evidence", "missing-quota-telemetry"],
    ),
    "model-effort-mismatch": (
        lambda doc: cand(doc)["assignments"][0].update(model="claude-sonnet", effort="medium"),
        2, (N, N, N), ["incomparable-pair", "model-effort-mismatch"],
    ),
    "failed-review": (
        lambda doc: cand(doc)["reviewed_dimensions"][0].__setitem__("verdict", "failed"),
        1, (R, S, S), ["failed-review"],
    ),
    "omitted-requirement": (
        setter("omitted_requirements", ["required-doc"]), 1, (R, S, S), ["omitted-requirement"]
    ),
    "slower-critical-path": (
        setter("critical_path_ms", 1001), 1, (R, S, S), ["critical-path-regression"]
    ),
    "slower-notification": (
        setter("notification_latency_ms", 101), 1, (R, S, S), ["notification-latency-regression"]
    ),
    "incomparable-workload": (
        setter("workload_id", "wl-b"), 2, (N, N, N), ["incomparable-pair", "incomparable-workload"]
    ),
    "duplicate-run-id": (
        setter("run_id", "baseline-run"), 2, (N, N, N), ["duplicate-run-id", "incomparable-pair"]
    ),
    "averaged-regression": (averaged, 1, (R, S, S), ["notification-latency-regression"]),
    "mixed-window-regression": (
        mixed_windows, 1, (R, S, R),
        ["subscription-consumption-regression", "unknown-quota-precision"],
    ),
}  # fmt: skip


def run_compare(artifact: Path, *args: str) -> tuple[int, Doc]:
    proc = run_pairlab("compare", str(artifact), *args, "--json")
    report: Doc = json.loads(proc.stdout)
    return proc.returncode, report


def failure_report(reason: str) -> Doc:
    return {
        "schema_version": 1,
        "verdict": N,
        "token_proxy_verdict": N,
        "subscription_verdict": N,
        "reason_codes": [reason],
        "pairs": [],
        "claim_scope": "finite-fixture-set",
    }


def write(tmp_path: Path, name: str, doc: Any) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", MATRIX)
def test_loom_matrix_scenario(name: str, tmp_path: Path) -> None:
    mutate, exit_code, (verdict, tokens, subscription), codes = MATRIX[name]
    doc = base()
    mutate(doc)
    code, report = run_compare(write(tmp_path, name, doc))
    assert code == exit_code, report
    assert (report["verdict"], report["token_proxy_verdict"], report["subscription_verdict"]) == (
        verdict,
        tokens,
        subscription,
    )
    assert report["reason_codes"] == codes
    assert report["schema_version"] == 1 and report["claim_scope"] == "finite-fixture-set"
    assert len(report["pairs"]) == len(doc["pairs"])
    for result, source in zip(report["pairs"], doc["pairs"], strict=True):
        assert result["work_unit_id"] == source["work_unit_id"]
        for arm in ("baseline", "candidate"):
            echoed = result[f"{arm}_provider_tokens"]
            assert echoed == source[arm]["provider_tokens"]
            assert all(list(v) == list(TOKEN_FIELDS) for v in echoed.values())
    if name == "averaged-regression":
        assert [p["verdict"] for p in report["pairs"]] == [S, R]
    else:
        pair = report["pairs"][0]
        assert (pair["verdict"], pair["token_proxy_verdict"], pair["subscription_verdict"]) == (
            verdict,
            tokens,
            subscription,
        )
        assert pair["reason_codes"] == codes


def test_valid_base_echoes_loom_quota_evidence(tmp_path: Path) -> None:
    _, report = run_compare(write(tmp_path, "valid", base()))
    assert report["pairs"][0]["quota_comparisons"] == [
        {
            "provider": "claude",
            "window": "five-hour",
            "baseline_consumption_percent": 4.0,
            "candidate_consumption_percent": 2.0,
            "combined_uncertainty_percent": 0.5,
        }
    ]
    assert report["pairs"][0]["baseline_provider_tokens"]["claude"]["input_tokens"] == 100
    assert report["pairs"][0]["candidate_provider_tokens"]["claude"]["input_tokens"] == 90


def test_malformed_manifest_is_a_failure_report(tmp_path: Path) -> None:
    doc = {"schema_version": 1, "intervention": {"intervention_id": "bad"}, "pairs": []}
    code, report = run_compare(write(tmp_path, "malformed", doc))
    assert (code, report) == (2, failure_report("malformed-input"))


def test_unknown_candidate_field_fails_to_decode(tmp_path: Path) -> None:
    doc = base()
    cand(doc)["raw_prompt"] = "secret"
    code, report = run_compare(write(tmp_path, "raw-prompt", doc))
    assert (code, report) == (2, failure_report("malformed-input"))


@pytest.mark.parametrize(("extra", "reason"), [(1, "input-too-large"), (0, "no-comparison-pairs")])
def test_padded_seed_at_and_over_16_mib(tmp_path: Path, extra: int, reason: str) -> None:
    doc = base()
    doc["pairs"] = []
    data = json.dumps(doc).encode()
    path = tmp_path / "padded.json"
    path.write_bytes(data + b" " * (16 * 1024 * 1024 + extra - len(data)))
    code, report = run_compare(path)
    assert (code, report) == (2, failure_report(reason))  # exactly 16 MiB is read and judged


def selection_cases(tmp_path: Path) -> list[list[str]]:
    value = {"--since": "1d", "--until": "2026-09-12T00:00:00Z", "--provider": "codex"}
    value |= {"--stage": "stage-a", "--plan": "plan-a", "--windows": "5h"}  # 5h is the default
    return [
        [flag] if flag == "--all" else [flag, value.get(flag, str(tmp_path))]
        for flag in SELECTION_FLAGS
    ]


def test_every_explicit_selection_flag_conflicts(tmp_path: Path) -> None:
    artifact = write(tmp_path, "valid", base())
    cases = selection_cases(tmp_path)
    assert len(cases) == 12
    for args in cases:
        code, report = run_compare(artifact, *args)
        assert (code, report) == (2, failure_report("comparison-selection-conflict")), args


def test_departure_one_interval_within_uncertainty_does_not_block(tmp_path: Path) -> None:
    """The seed: "no worse observed consumption in any interval, and a reduction larger
    than combined measurement uncertainty in at least one interval". loom would answer
    inconclusive with [quota-change-within-uncertainty] (it needs every interval reduced)."""
    doc = base()
    doc["pairs"][0]["baseline"]["quota_observations"].append(
        quota("claude", "seven-day", 1000, (50.0, 51.0))
    )
    cand(doc)["quota_observations"].append(quota("claude", "seven-day", 2000, (51.0, 52.0)))
    code, report = run_compare(write(tmp_path, "one-window-flat", doc))
    assert (code, report["verdict"], report["subscription_verdict"]) == (0, S, S)
    assert report["reason_codes"] == []
    assert [q["window"] for q in report["pairs"][0]["quota_comparisons"]] == [
        "five-hour",
        "seven-day",
    ]
    # an observed increase, even one within the uncertainty, is "worse": still inconclusive
    cand(doc)["quota_observations"][1]["used_percent_end"] = 52.25
    code, report = run_compare(write(tmp_path, "one-window-up", doc))
    assert (code, report["subscription_verdict"]) == (2, N)
    assert report["reason_codes"] == ["quota-change-within-uncertainty"]


def test_departure_decimal_arithmetic_on_written_values(tmp_path: Path) -> None:
    """Use 0.5 and 0.7 points at precision 0.1 each: the difference is exactly U = 0.2,
    so not "larger than combined measurement uncertainty". In binary floats (loom)
    10.8 - 10.1 - (10.6 - 10.1) exceeds 0.1 + 0.1, and loom rejects the candidate."""
    assert (10.8 - 10.1) - (10.6 - 10.1) > 0.1 + 0.1  # what loom's f64 arithmetic sees
    doc = base()
    for arm, used in (("baseline", (10.1, 10.6)), ("candidate", (10.1, 10.8))):
        q = doc["pairs"][0][arm]["quota_observations"][0]
        q.update(used_percent_start=used[0], used_percent_end=used[1], precision_percent=0.1)
    code, report = run_compare(write(tmp_path, "decimal", doc))
    assert (code, report["subscription_verdict"]) == (2, N)
    assert report["reason_codes"] == ["quota-change-within-uncertainty"]
    assert report["pairs"][0]["quota_comparisons"][0] == {
        "provider": "claude",
        "window": "five-hour",
        "baseline_consumption_percent": 0.5,
        "candidate_consumption_percent": 0.7,
        "combined_uncertainty_percent": 0.2,
    }
