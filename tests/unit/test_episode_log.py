"""Issue 28: a large episode log is read by two processes (pairlab.core.analysis.episode_log),
with the frame and the errors of one process reading it all."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

from pairlab.core.analysis.episode_log import read_frame
from pairlab.core.errors import InvalidInputError
from tests.unit.test_cohorts import cohort_records, lines_of

TWO = 0  # split_min_bytes: always two processes
ONE = 1 << 62


@pytest.fixture
def lines() -> list[str]:
    records = cohort_records(9, arms=("baseline", "optimizer", "full"))
    return lines_of(records + cohort_records(7, clientVersion="2.0"))


def write(path: Path, lines: list[str], newline: str = "\n") -> Path:
    path.write_bytes(newline.join(lines).encode("utf-8") + newline.encode())
    return path


def test_two_processes_build_the_frame_one_builds(tmp_path: Path, lines: list[str]) -> None:
    for newline in ("\n", "\r\n"):
        log = write(tmp_path / "episodes.jsonl", ["", *lines[:20], "", *lines[20:]], newline)
        one, two = read_frame(log, "log", ONE), read_frame(log, "log", TWO)
        assert two.height == len(lines)
        assert_frame_equal(one, two)
        assert one["episodeId"].to_list() == [json.loads(x)["episodeId"] for x in lines]


@pytest.mark.parametrize("where", ["first half", "second half", "last line"])
def test_a_bad_line_is_named_as_one_process_names_it(
    tmp_path: Path, lines: list[str], where: str
) -> None:
    bad = {"first half": 3, "second half": len(lines) - 5, "last line": len(lines) - 1}[where]
    broken = list(lines)
    broken[bad] = broken[bad].replace('"arm":"', '"arm":7, "x":"')
    broken.insert(bad + 2, broken[bad].replace('"arm":7', '"arm":8'))  # a second bad line
    log = write(tmp_path / "episodes.jsonl", ["", *broken])
    errors = []
    for split in (ONE, TWO):
        with pytest.raises(InvalidInputError) as caught:
            read_frame(log, "log", split)
        errors.append((str(caught.value), caught.value.reason))
    assert errors[0] == errors[1]
    assert errors[1][0].startswith(f"log:{bad + 2}: invalid episode record")  # 1 blank line


def test_a_worker_that_cannot_start_costs_time_not_the_result(
    tmp_path: Path, lines: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = write(tmp_path / "episodes.jsonl", lines)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    assert_frame_equal(read_frame(log, "log", TWO), read_frame(log, "log", ONE))
