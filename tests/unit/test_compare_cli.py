"""``pairlab compare`` through the real console script: exit codes, JSON, refusals.

Each case runs the installed CLI in a subprocess, so the exit code is the
process's own, and checks that no failure path prints a traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from pairlab.cli.compare import SELECTION_FLAGS
from pairlab.core.verdict import MAX_ARTIFACT_BYTES

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "compare"


def run_compare(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "pairlab"
    argv = (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "from pairlab.cli import main; main()"]
    )
    proc = subprocess.run(
        [*argv, "compare", *args], capture_output=True, text=True, check=False, timeout=120
    )
    assert "Traceback" not in proc.stderr + proc.stdout
    return proc


def as_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    output: dict[str, Any] = json.loads(proc.stdout)
    assert output["exit_code"] == proc.returncode
    assert output["claim_scope"] == "finite-fixture-set"
    return output


def test_supported_artifact_exits_0_with_a_readable_summary() -> None:
    proc = run_compare(str(GOLDEN / "supported.json"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("pairlab compare: supported-candidate (exit 0)")
    assert "wu-002 [warm-start]: supported-candidate" in proc.stdout


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
    args = [arg for flag in SELECTION_FLAGS for arg in (flag, "x")]
    proc = run_compare(str(tmp_path / "never-read.json"), "--json", *args)
    assert proc.returncode == 2
    output = as_json(proc)
    assert output["reason_codes"] == ["comparison-selection-conflict"]
    assert [p["where"] for p in output["problems"]] == list(SELECTION_FLAGS)
