"""`pairlab.cli.json_stream`: the compact JSON streamed in blocks is the one-shot text,
and a write that fails (a closed pipe, a full disk) fails the command."""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import io
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import orjson
import pytest

from pairlab.cli.json_stream import compact_chunks, write_in_background
from pairlab.cli.output import encode_json, write_all
from pairlab.core.analysis.cohorts import analyse_cohorts
from pairlab.core.analysis.result_fragments import json_parts, json_with_fragments
from pairlab.core.errors import ExecutionError, ReasonCode
from tests.support import pairlab_argv, run_pairlab
from tests.unit.test_cohorts import cohort_records, lines_of
from tests.unit.test_result_fragments import _mixed_records

BLOCKS = (1, 2, 3, 4, 256)  # 256: more than every item list here


def _streamed(head: dict, key: str, items: Iterator | list, block: int) -> bytes:
    return b"".join(bytes(c) for c in compact_chunks(head, key, items, block=block))


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("count", [0, 1, 2, 3, 7])
def test_the_blocks_splice_to_the_one_shot_text(block: int, count: int) -> None:
    head = {
        "schemaVersion": 2,
        "when": dt.datetime(2026, 1, 2, tzinfo=dt.UTC),
        "rate": np.float64(0.25),
        "text": "naïve ✓",
        "nested": {"cohorts": [1], "x": None},
    }
    items = [
        {"i": i, "v": [i, float("nan"), "∞"], "f": orjson.Fragment(b'{"a":1}')}
        for i in range(count)
    ]
    whole = encode_json({**head, "cohorts": items}, pretty=False, newline=True)
    assert _streamed(head, "cohorts", iter(items), block) == whole


def test_the_last_key_must_not_be_in_the_head() -> None:
    with pytest.raises(ValueError, match="last key"):
        list(compact_chunks({"cohorts": 1}, "cohorts", []))


@pytest.mark.parametrize("block", BLOCKS)
def test_a_streamed_analysis_is_the_bytes_of_the_whole_payload(block: int) -> None:
    analysis = analyse_cohorts(_mixed_records(), run_id="run-a", min_pairs=5, n_resamples=200)
    whole = encode_json(json_with_fragments(analysis, pretty=False), pretty=False, newline=True)
    assert whole == orjson.dumps(analysis.to_json(), option=orjson.OPT_APPEND_NEWLINE)
    head, cohorts = json_parts(analysis, pretty=False)
    assert _streamed(head, "cohorts", cohorts, block) == whole


class _Trickle(io.RawIOBase):
    """A raw stream that takes at most ``step`` bytes a call and fails past ``limit``."""

    def __init__(self, step: int, limit: int | None = None) -> None:
        self.data, self.step, self.limit = bytearray(), step, limit

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[no-untyped-def, override]
        if self.limit is not None and len(self.data) >= self.limit:
            raise OSError(errno.ENOSPC, "No space left on device")
        taken = bytes(b[: self.step])
        self.data += taken
        return len(taken)


def test_short_writes_are_retried_until_every_byte_is_written() -> None:
    sink = _Trickle(step=3)
    write_all(sink, b"0123456789")  # type: ignore[arg-type]
    assert sink.data == b"0123456789"
    sink = _Trickle(step=7)
    write_in_background([b"abc", memoryview(b"[defghijklmnop]")[1:-1], b"q"], sink)  # type: ignore[arg-type]
    assert sink.data == b"abcdefghijklmnopq"


def test_a_disk_that_fills_is_an_error_not_a_short_success() -> None:
    sink = _Trickle(step=4, limit=8)
    with pytest.raises(ExecutionError) as failed:
        write_in_background([b"0123456789", b"more", b"and more"], sink)  # type: ignore[arg-type]
    assert failed.value.reason == ReasonCode.OUTPUT_WRITE_FAILED
    assert "No space left on device" in failed.value.message and sink.data == b"01234567"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("pretty", [False, True])
def test_the_cli_writing_to_a_full_device_says_so_and_exits_1(tmp_path: Path, pretty: bool) -> None:
    """The real command, its stdout the kernel's always-full device: a clear error on
    stderr (no traceback), exit 1 - never a short success."""
    log = tmp_path / "episodes.jsonl"
    log.write_text("\n".join(lines_of(cohort_records(6))) + "\n", encoding="utf-8")
    args = ["aggregate", str(log), "--json", "--resamples", "200"]
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            pairlab_argv(*args, *(["--pretty"] if pretty else [])),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    assert done.returncode == 1, done.stderr
    assert "[output-write-failed]" in done.stderr and "No space left" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_closed_pipe_raises_broken_pipe_and_stops_the_encoding() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    taken = []

    def chunks() -> Iterator[bytes]:
        for number in range(1000):
            taken.append(number)
            yield b"x" * 100_000

    with open(write_end, "wb") as out, pytest.raises(BrokenPipeError):
        write_in_background(chunks(), out, depth=2)
    assert len(taken) < 1000  # the producer stopped once the writer failed


def _exit_into_a_pipe_closed_after(n_bytes: int, args: list[str]) -> tuple[int, bytes, str]:
    """The real CLI writing into a 4 KiB pipe whose reader takes ``n_bytes`` and leaves
    (``| head -c N``): its status, what was read, its stderr."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    with subprocess.Popen(pairlab_argv(*args), stdout=write_end, stderr=subprocess.PIPE) as proc:
        os.close(write_end)
        with open(read_end, "rb") as reader:
            head = reader.read(n_bytes)
        _, err = proc.communicate(timeout=120)
    return proc.returncode, head, err.decode()


@pytest.mark.parametrize("pretty", [[], ["--pretty"]])
def test_aggregate_json_into_a_closed_pipe_exits_1_quietly(
    pretty: list[str], tmp_path: Path
) -> None:
    """``pairlab aggregate LOG --json | head -c 20``: status 1 (typer's EPIPE), no traceback.
    ``typer.echo`` took the write's short count (what the pipe held when its reader left)
    as done: status 0 with part of the JSON."""
    path = tmp_path / "episodes.jsonl"
    records = [r for task in ("t1", "t2", "t3") for r in cohort_records(8, taskId=task)]
    path.write_text("\n".join(lines_of(records)) + "\n", encoding="utf-8")
    args = ["aggregate", str(path), "--json", "--resamples", "200", *pretty]
    assert len(run_pairlab(*args).stdout) > 3 * 4096  # more than the pipe holds
    code, head, err = _exit_into_a_pipe_closed_after(20, args)
    assert code == 1 and head.startswith(b"{") and "Traceback" not in err
