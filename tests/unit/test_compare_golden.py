"""Golden verdicts: every loom artifact under tests/fixtures/compare/ against expected/<name>.json.

The corpus covers every reason code loom can emit and every exit path (0, 1,
2). Four cases are not artifact files: a refused selection flag (through the
real CLI), an unreadable path, a sparse file one byte over 16 MiB and an
artifact of 1,025 pairs (built here rather than stored).
Regenerate expected outputs with PAIRLAB_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pairlab.core.verdict import (
    MAX_ARTIFACT_BYTES,
    MAX_PAIRS,
    VerdictReason,
    VerdictReport,
    judge_artifact_bytes,
    judge_file,
)
from tests.support import COMPARE_FIXTURES, compare_cases, run_pairlab

GOLDEN = COMPARE_FIXTURES
EXPECTED = GOLDEN / "expected"
ARTIFACTS = sorted(GOLDEN.glob("*.json"))
SPECIAL = ("cli-selection-conflict", "input-read-failed", "input-too-large", "pair-limit-exceeded")
# loom's vocabulary holds two codes no artifact can produce, in loom as here (reasons.py)
UNREACHABLE = {"missing-provider-token-vector", "quota-reduction-not-established"}
UPDATE = os.environ.get("PAIRLAB_UPDATE_GOLDEN") == "1"


def check_golden(name: str, exit_code: int, report: dict[str, Any]) -> None:
    """expected/<name>.json holds the exit code and the ``--json`` report (loom's shape)."""
    actual = {"exit_code": exit_code, "report": report}
    path = EXPECTED / f"{name}.json"
    if UPDATE:
        path.write_text(json.dumps(actual, indent=2) + "\n", encoding="utf-8")
    assert actual == json.loads(path.read_text(encoding="utf-8"))


def expected_outputs() -> list[tuple[str, int, dict[str, Any]]]:
    outputs = []
    for path in sorted(EXPECTED.glob("*.json")):
        stored = json.loads(path.read_text(encoding="utf-8"))
        outputs.append((path.stem, stored["exit_code"], stored["report"]))
    return outputs


def _golden_report(name: str, report: VerdictReport) -> None:
    check_golden(name, report.exit_code, report.to_json())


@pytest.mark.parametrize("artifact", ARTIFACTS, ids=[p.stem for p in ARTIFACTS])
def test_golden_artifact(artifact: Path) -> None:
    _golden_report(artifact.stem, judge_file(artifact))


def test_golden_selection_conflict_through_cli() -> None:
    args = ("--json", "--provider", "all", "--since", "1d")
    proc = run_pairlab("compare", str(GOLDEN / "supported.json"), *args)
    assert proc.returncode == 2, proc.stderr
    check_golden("cli-selection-conflict", proc.returncode, json.loads(proc.stdout))


def test_golden_unreadable_path(tmp_path: Path) -> None:
    _golden_report("input-read-failed", judge_file(tmp_path / "absent.json"))


def test_golden_oversized_file_is_refused_before_parsing(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as handle:  # sparse: a valid start, then a hole, 16 MiB + 1 bytes
        handle.write(b'{"schema_version": 1, "pairs": [')
        handle.truncate(MAX_ARTIFACT_BYTES + 1)
    assert big.stat().st_size == MAX_ARTIFACT_BYTES + 1
    _golden_report("input-too-large", judge_file(big))


def test_golden_pair_limit_is_a_whole_artifact_failure() -> None:
    doc = json.loads((GOLDEN / "supported.json").read_text(encoding="utf-8"))
    template = doc["pairs"][0]
    doc["pairs"] = [template] * (MAX_PAIRS + 1)  # every pair decodes; the count is the fault
    _golden_report("pair-limit-exceeded", judge_artifact_bytes(json.dumps(doc).encode()))


def test_every_expected_output_has_a_case() -> None:
    names = {p.stem for p in EXPECTED.glob("*.json")}
    assert names == {p.stem for p in ARTIFACTS} | set(SPECIAL)


def test_corpus_produces_exactly_every_reason_code() -> None:
    produced: set[str] = set()
    for _, _, output in expected_outputs():
        produced |= set(output["reason_codes"])
        for pair in output["pairs"]:
            assert set(pair["reason_codes"]) <= set(output["reason_codes"])
    assert produced == {str(code) for code in VerdictReason} - UNREACHABLE
    assert {str(code) for code in VerdictReason} > UNREACHABLE
    assert len(VerdictReason) == 55


def test_corpus_covers_every_exit_path() -> None:
    exits = {exit_code for _, exit_code, _ in expected_outputs()}
    assert exits == {0, 1, 2}


def test_exit_code_is_the_overall_verdicts_and_failures_have_no_pairs() -> None:
    exits = {"supported-candidate": 0, "rejected": 1, "inconclusive": 2}
    for name, exit_code, output in expected_outputs():
        assert exit_code == exits[output["verdict"]], name
        assert output["claim_scope"] == "finite-fixture-set"
        if not output["pairs"]:  # a whole-artifact failure: every verdict inconclusive
            assert {output["token_proxy_verdict"], output["subscription_verdict"]} == {
                "inconclusive"
            }, name


def test_reason_codes_are_sorted_and_unique_in_every_output() -> None:
    for name, _, output in expected_outputs():
        lists = [output["reason_codes"], *(p["reason_codes"] for p in output["pairs"])]
        for codes in lists:
            assert codes == sorted(set(codes)), name


def test_fixtures_match_their_generator(tmp_path: Path) -> None:
    for written in compare_cases().write_cases(tmp_path):
        assert written.read_bytes() == (GOLDEN / written.name).read_bytes(), written.name


def test_documented_example_gives_the_documented_output() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "compare-artifact.md").read_text()
    blocks = [b.split("```", 1)[0] for b in doc.split("```json\n")[1:]]
    artifact, output = blocks[0], json.loads(blocks[1])
    report = judge_artifact_bytes(artifact.encode())
    assert report.to_json() == output
    assert report.exit_code == 0
