"""Speed of the offline verdict (``pairlab compare``'s engine) on loom artifacts.

* judging the largest artifact loom's schema admits in pairs (1,024 pairs, both arms
  with two providers, token vectors and quota intervals), best of 3;
* refusing a sparse file one byte over 16 MiB (size check before any read).
"""

from __future__ import annotations

import copy
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.result import Result
from pairlab.core.verdict import MAX_ARTIFACT_BYTES, MAX_PAIRS, judge_artifact_bytes, judge_file

FIXTURE = (
    Path(__file__).resolve().parent.parent / "tests/fixtures/compare/supported-two-providers.json"
)


def largest_artifact() -> bytes:
    doc: dict[str, Any] = json.loads(FIXTURE.read_text())
    template = doc["pairs"][0]
    pairs = []
    for i in range(MAX_PAIRS):
        pair = copy.deepcopy(template)
        pair["work_unit_id"] = f"wu-{i:04d}"
        pair["baseline"]["run_id"] = f"wu-{i:04d}:baseline"
        pair["candidate"]["run_id"] = f"wu-{i:04d}:candidate"
        pairs.append(pair)
    doc["pairs"] = pairs
    return json.dumps(doc).encode()


def run() -> list[Result]:
    data = largest_artifact()
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        report = judge_artifact_bytes(data)
        best = min(best, time.perf_counter() - started)
    assert report.exit_code == 0 and len(report.pairs) == MAX_PAIRS
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.json"
        with big.open("wb") as handle:
            handle.truncate(MAX_ARTIFACT_BYTES + 1)
        started = time.perf_counter()
        refused = judge_file(big)
        refuse_s = time.perf_counter() - started
    assert refused.reason_codes == ["input-too-large"]
    mib = len(data) / 2**20
    return [
        Result(
            f"judge {MAX_PAIRS} pairs ({mib:.1f} MiB artifact), best of 3",
            best,
            "s",
            "< 5 s",
            best < 5.0,
        ),
        Result("refuse a 16 MiB + 1 byte file", refuse_s * 1000, "ms", "< 10 ms", refuse_s < 0.01),
    ]
