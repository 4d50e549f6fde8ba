"""Golden verdicts: every artifact under tests/fixtures/compare/ against expected/<name>.json.

The corpus covers every reason code of DESIGN 9 and every exit path (0, 1, 2).
Three cases are not artifact files: a refused selection flag (through the real
CLI), an unreadable path and a sparse file one byte over 16 MiB.
Regenerate expected outputs with PAIRLAB_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pairlab.core.verdict import (
    MAX_ARTIFACT_BYTES,
    VerdictReason,
    judge_artifact_bytes,
    judge_file,
)

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "compare"
EXPECTED = GOLDEN / "expected"
ARTIFACTS = sorted(GOLDEN.glob("*.json"))
SPECIAL = ("cli-selection-conflict", "input-read-failed", "input-too-large")
UPDATE = os.environ.get("PAIRLAB_UPDATE_GOLDEN") == "1"


def pairlab_argv(*args: str) -> list[str]:
    script = Path(sys.executable).parent / "pairlab"
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-c", "from pairlab.cli import main; main()", *args]


def check_golden(name: str, actual: dict[str, Any]) -> None:
    path = EXPECTED / f"{name}.json"
    if UPDATE:
        path.write_text(json.dumps(actual, indent=2) + "\n", encoding="utf-8")
    assert actual == json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("artifact", ARTIFACTS, ids=[p.stem for p in ARTIFACTS])
def test_golden_artifact(artifact: Path) -> None:
    report = judge_file(artifact)
    output = report.to_json()
    assert output["exit_code"] == report.exit_code
    check_golden(artifact.stem, output)


def test_golden_selection_conflict_through_cli() -> None:
    proc = subprocess.run(
        pairlab_argv(
            "compare",
            str(GOLDEN / "supported.json"),
            "--json",
            "--provider",
            "all",
            "--since",
            "1d",
        ),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    check_golden("cli-selection-conflict", json.loads(proc.stdout))


def test_golden_unreadable_path(tmp_path: Path) -> None:
    check_golden("input-read-failed", judge_file(tmp_path / "absent.json").to_json())


def test_golden_oversized_file_is_refused_before_parsing(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as handle:  # sparse: a valid start, then a hole, 16 MiB + 1 bytes
        handle.write(b'{"schema_version": 1, "pairs": [')
        handle.truncate(MAX_ARTIFACT_BYTES + 1)
    assert big.stat().st_size == MAX_ARTIFACT_BYTES + 1
    check_golden("input-too-large", judge_file(big).to_json())


def test_every_expected_output_has_a_case() -> None:
    names = {p.stem for p in EXPECTED.glob("*.json")}
    assert names == {p.stem for p in ARTIFACTS} | set(SPECIAL)


def test_corpus_produces_exactly_every_reason_code() -> None:
    produced: set[str] = set()
    for path in EXPECTED.glob("*.json"):
        output = json.loads(path.read_text(encoding="utf-8"))
        produced |= set(output["reason_codes"])
        for pair in output["pairs"]:
            assert set(pair["reason_codes"]) <= set(output["reason_codes"])
    assert produced == {str(code) for code in VerdictReason}
    assert len(VerdictReason) == 55


def test_corpus_covers_every_exit_path() -> None:
    exits = {
        json.loads(p.read_text(encoding="utf-8"))["exit_code"] for p in EXPECTED.glob("*.json")
    }
    assert exits == {0, 1, 2}


def test_reason_codes_are_sorted_and_unique_in_every_output() -> None:
    for path in EXPECTED.glob("*.json"):
        output = json.loads(path.read_text(encoding="utf-8"))
        lists = [output["reason_codes"], *(p["reason_codes"] for p in output["pairs"])]
        for codes in lists:
            assert codes == sorted(set(codes)), path.name


def test_fixtures_match_their_generator(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("compare_cases", GOLDEN / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for written in module.write_cases(tmp_path):
        assert written.read_bytes() == (GOLDEN / written.name).read_bytes(), written.name


def test_documented_example_gives_the_documented_output() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "compare-artifact.md").read_text()
    blocks = [b.split("```", 1)[0] for b in doc.split("```json\n")[1:]]
    artifact, output = blocks[0], json.loads(blocks[1])
    report = judge_artifact_bytes(artifact.encode())
    assert report.to_json() == output
    assert report.exit_code == 0
