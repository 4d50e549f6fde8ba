"""``pairlab compare`` through the real console script: exit codes, JSON, refusals.

Each case runs the installed CLI in a subprocess, so the exit code is the
process's own, and checks that no failure path prints a traceback.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from pairlab.cli.compare import SELECTION_FLAGS
from pairlab.core.verdict import MAX_ARTIFACT_BYTES
from tests.support import COMPARE_FIXTURES as GOLDEN
from tests.support import run_pairlab


def run_compare(*args: str) -> subprocess.CompletedProcess[str]:
    return run_pairlab("compare", *args)


def as_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    output: dict[str, Any] = json.loads(proc.stdout)
    exits = {"supported-candidate": 0, "rejected": 1, "inconclusive": 2}
    assert exits[output["verdict"]] == proc.returncode
    assert list(output) == [
        "schema_version",
        "verdict",
        "token_proxy_verdict",
        "subscription_verdict",
        "reason_codes",
        "pairs",
        "claim_scope",
    ]
    assert output["claim_scope"] == "finite-fixture-set"
    return output


def test_supported_artifact_exits_0_with_loom_text() -> None:
    proc = run_compare(str(GOLDEN / "supported.json"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "comparison: supported-candidate; token proxy: supported-candidate; "
        "subscription: supported-candidate",
        "wu-001:cold-start: supported-candidate",
        "wu-002:warm-start: supported-candidate",
    ]


def test_text_of_a_refused_artifact_lists_its_reasons() -> None:
    proc = run_compare(str(GOLDEN / "malformed-json.json"))
    assert proc.returncode == 2
    assert proc.stdout.splitlines()[1:] == ["reasons: malformed-input"]


def test_explain_says_which_rule_decided_each_pair() -> None:
    proc = run_compare(str(GOLDEN / "incomparable-workload-rejected-on-latency.json"), "--explain")
    assert proc.returncode == 1
    text = proc.stdout
    assert text.startswith("overall: rejected (exit 1)")
    assert "Roll back with your ordinary scoped revert procedure" in text
    first, second = text.split("\npair ")[1:]
    assert first.startswith("wu-001:cold-start: rejected")
    assert "decided by: a regression in latency" in first
    assert "90000 ms against 84000 ms (critical-path-regression)" in first
    assert "not compared: the pair is structurally invalid or not like for like" in first
    assert second.startswith("wu-002:warm-start: supported-candidate")


def test_explain_names_where_a_malformed_artifact_fails() -> None:
    proc = run_compare(str(GOLDEN / "malformed-unknown-field.json"), "--explain")
    assert proc.returncode == 2
    assert "at pairs.0.candidate.raw_prompt: Extra inputs are not permitted" in proc.stdout
    assert "please fix the test" not in proc.stdout  # the input's values are never echoed


def test_json_with_explain_keeps_stdout_json() -> None:
    proc = run_compare(str(GOLDEN / "quota-reset-crossing.json"), "--json", "--explain")
    assert as_json(proc)["reason_codes"] == ["quota-reset-crossing"]
    assert "decided by: missing or insufficient evidence" in proc.stderr
    assert "quota-reset-crossing" in proc.stderr


def test_rejected_verdict_exits_1_with_json() -> None:
    proc = run_compare(str(GOLDEN / "critical-path-regression.json"), "--json")
    assert proc.returncode == 1, proc.stderr
    output = as_json(proc)
    assert output["verdict"] == "rejected"
    assert output["reason_codes"] == ["critical-path-regression"]
    assert [p["verdict"] for p in output["pairs"]] == ["rejected", "supported-candidate"]


def test_oversized_sparse_file_exits_2_with_its_reason(tmp_path: Path) -> None:
    big = tmp_path / "huge.json"
    with big.open("wb") as handle:
        handle.truncate(MAX_ARTIFACT_BYTES + 1)
    proc = run_compare(str(big), "--json")
    assert proc.returncode == 2
    assert as_json(proc)["reason_codes"] == ["input-too-large"]


def test_malformed_input_exits_2_and_still_prints_json() -> None:
    proc = run_compare(str(GOLDEN / "malformed-json.json"), "--json")
    assert proc.returncode == 2
    assert as_json(proc)["reason_codes"] == ["malformed-input"]


def test_every_selection_flag_is_refused_before_reading(tmp_path: Path) -> None:
    args = [
        arg for flag in SELECTION_FLAGS for arg in ((flag,) if flag == "--all" else (flag, "x"))
    ]
    proc = run_compare(str(tmp_path / "never-read.json"), "--json", "--explain", *args)
    assert proc.returncode == 2
    output = as_json(proc)
    assert output["reason_codes"] == ["comparison-selection-conflict"]
    assert "refused " + ", ".join(SELECTION_FLAGS) in proc.stderr
