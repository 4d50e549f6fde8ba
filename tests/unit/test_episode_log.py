"""Issue 28: a large episode log may be read by two processes (pairlab.core.analysis.episode_log),
with the frame and the errors of one process reading it all."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pairlab.core.analysis import episode_log
from pairlab.core.analysis.episode_log import ENV_READERS, read_frame
from pairlab.core.errors import InvalidInputError
from tests.unit.test_cohorts import cohort_records, lines_of


@pytest.fixture
def lines() -> list[str]:
    records = cohort_records(9, arms=("baseline", "optimizer", "full"))
    return lines_of(records + cohort_records(7, clientVersion="2.0"))


def write(path: Path, lines: list[str], newline: str = "\n") -> Path:
    path.write_bytes(newline.join(lines).encode("utf-8") + newline.encode())
    return path


def read(log: Path, readers: str, monkeypatch: pytest.MonkeyPatch) -> pl.DataFrame:
    monkeypatch.setenv(ENV_READERS, readers)
    return read_frame(log, "log")


def test_two_processes_build_the_frame_one_builds(
    tmp_path: Path, lines: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for newline in ("\n", "\r\n"):
        log = write(tmp_path / "episodes.jsonl", ["", *lines[:20], "", *lines[20:]], newline)
        one, two = read(log, "1", monkeypatch), read(log, "2", monkeypatch)
        assert two.height == len(lines)
        assert_frame_equal(one, two)
        assert one["episodeId"].to_list() == [json.loads(x)["episodeId"] for x in lines]


@pytest.mark.parametrize("where", ["first half", "second half", "last line"])
def test_a_bad_line_is_named_as_one_process_names_it(
    tmp_path: Path, lines: list[str], where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = {"first half": 3, "second half": len(lines) - 5, "last line": len(lines) - 1}[where]
    broken = list(lines)
    broken[bad] = broken[bad].replace('"arm":"', '"arm":7, "x":"')
    broken.insert(bad + 2, broken[bad].replace('"arm":7', '"arm":8'))  # a second bad line
    log = write(tmp_path / "episodes.jsonl", ["", *broken])
    errors = []
    for readers in ("1", "2"):
        with pytest.raises(InvalidInputError) as caught:
            read(log, readers, monkeypatch)
        errors.append((str(caught.value), caught.value.reason))
    assert errors[0] == errors[1]
    assert errors[1][0].startswith(f"log:{bad + 2}: invalid episode record")  # 1 blank line


def test_a_worker_that_cannot_start_costs_time_not_the_result(
    tmp_path: Path, lines: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = write(tmp_path / "episodes.jsonl", lines)
    one = read(log, "1", monkeypatch)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    assert_frame_equal(read(log, "2", monkeypatch), one)


def test_two_readers_when_asked_or_for_a_large_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_READERS, "2")
    assert episode_log._two_readers(10, episode_log.SPLIT_MIN_BYTES)
    monkeypatch.setenv(ENV_READERS, "1")
    assert not episode_log._two_readers(1 << 40, episode_log.SPLIT_MIN_BYTES)
    monkeypatch.delenv(ENV_READERS)
    assert not episode_log._two_readers(episode_log.SPLIT_MIN_BYTES - 1, 1 << 30)
    monkeypatch.setattr(episode_log.os, "cpu_count", lambda: 2)
    assert episode_log._two_readers(1 << 30, 1 << 28)
    monkeypatch.setattr(episode_log.os, "cpu_count", lambda: 1)
    assert not episode_log._two_readers(1 << 30, 1 << 28)
