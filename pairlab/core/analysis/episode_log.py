"""An episode log (JSON lines) as the analysis frame, read by one process or, when large, two.

Every line is validated by the schema (:func:`pairlab.core.schemas.episode.parse_episode_line`):
~10-25 us of pydantic per line, ~15-25 s of a million-line log, and it holds the GIL, so
threads cannot share it. From :data:`SPLIT_MIN_BYTES` on (with more than one CPU) the log
is cut at the first line break after its middle byte (moved by what the worker's start
costs, :data:`WORKER_START_BYTES`): a worker process
(``python -m pairlab.core.analysis.episode_log LOG OFFSET``) validates the second half and
builds its part of the frame (:func:`pairlab.core.analysis.pairing.episodes_frame`) while
this process does the first half; its frame comes back as Arrow IPC and the two are joined
in file order (zstd-compressed: 21 MB instead of 230 MB through the pipe at a million
lines, 0.3 s of CPU against ~1 s of the kernel's copying). The frame is the one a single process builds (same rows, same order).
Measured on the 2-core VM (bench/README.md): two readers from 61 MB on (below, the
worker's ~0.6 s start eats the gain), 6.8 s for a million lines (584 MB). ``PAIRLAB_LOG_READERS``: ``1`` always one process, ``2`` two whenever the
log has a line break past the cut.

Errors stay those of one process reading the whole log, first bad line first: a bad line
of the first half raises at once (the worker is stopped); when the worker fails for any
reason, this process reads the second half itself, numbering its lines from where the
first half ended, so the error names the same line with the same message (and a worker
that could not start costs time, never a result). The cut is after a ``\\n`` byte: a line
boundary for Python's universal newlines too, and a character boundary in UTF-8.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Final

import polars as pl

from pairlab.core.analysis.pairing import episodes_frame
from pairlab.core.schemas.episode import iter_episode_lines

# ~100,000 lines of the bench's records: two readers measured faster from here on a quiet
# VM (61 MB: 1.02 s wall against 1.31 s; 117 MB: 1.8 s against 2.35 s; a million lines:
# 6.8 s against ~12.5 s); below, the worker's start (~0.6 s) eats what it saves
SPLIT_MIN_BYTES: Final = 64 * 1024 * 1024
# What the worker's start costs, in bytes this process reads meanwhile: measured at a
# million lines (~12 ms per MB), an even cut left this process waiting ~0.4 s for it
WORKER_START_BYTES: Final = 30 * 1024 * 1024
ENV_READERS: Final = "PAIRLAB_LOG_READERS"  # "1": one process; "2": two; unset: decided here


def _two_readers(size: int, split_min_bytes: int) -> bool:
    """Whether to read with two processes: as asked by :data:`ENV_READERS`, else for a log
    of ``split_min_bytes`` or more on more than one CPU."""
    asked = os.environ.get(ENV_READERS, "").strip()
    if asked in ("1", "2"):
        return asked == "2"
    return size >= split_min_bytes and (os.cpu_count() or 1) > 1


class _Head(io.RawIOBase):
    """The first ``limit`` bytes of a binary file, as a raw stream."""

    def __init__(self, raw: IO[bytes], limit: int) -> None:
        self._raw, self._left = raw, limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        want = min(len(buffer), self._left)
        if want <= 0:
            return 0
        got = self._raw.readinto(memoryview(buffer)[:want])  # type: ignore[attr-defined]
        self._left -= got or 0
        return got or 0


class _Counted:
    """Lines passed through, counted (blank ones too)."""

    def __init__(self, lines: IO[str]) -> None:
        self._lines, self.count = lines, 0

    def __iter__(self) -> Iterator[str]:
        for line in self._lines:
            self.count += 1
            yield line


def _split_point(path: Path, size: int) -> int | None:
    """The offset just after the first ``\\n`` at or after the cut byte (None: none): the
    middle, moved towards the end by half of :data:`WORKER_START_BYTES` (at most an eighth of
    the log)."""
    with path.open("rb") as raw:
        raw.seek(size // 2 + min(WORKER_START_BYTES // 2, size // 8))
        raw.readline()
        cut = raw.tell()
    return cut if 0 < cut < size else None


def _tail_text(path: Path, start: int) -> IO[str]:
    raw = path.open("rb")
    raw.seek(start)
    return io.TextIOWrapper(raw, encoding="utf-8")


def read_frame(path: Path, source: str, split_min_bytes: int = SPLIT_MIN_BYTES) -> pl.DataFrame:
    """``path``'s records as the analysis frame, each line validated (errors name ``source``
    and the line); a log of ``split_min_bytes`` or more may be read by two processes
    (:func:`_two_readers`).
    Raises what reading raises (FileNotFoundError, OSError, UnicodeDecodeError) and
    :class:`pairlab.core.errors.InvalidInputError` for a bad line."""
    size = path.stat().st_size
    cut = _split_point(path, size) if _two_readers(size, split_min_bytes) else None
    if cut is None:
        with path.open(encoding="utf-8") as handle:
            return episodes_frame(iter_episode_lines(handle, source))
    try:
        worker = subprocess.Popen(
            [sys.executable, "-m", "pairlab.core.analysis.episode_log", str(path), str(cut)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # a failed worker is retried here, where errors are raised
        )
    except OSError:  # no worker: one process
        with path.open(encoding="utf-8") as handle:
            return episodes_frame(iter_episode_lines(handle, source))
    assert worker.stdout is not None
    # The worker's frame is taken as it comes (a thread; the reads release the GIL): read
    # only after the first half, it waited ~0.5 s on a full pipe at a million lines.
    received: list[bytes] = []
    taker = threading.Thread(target=lambda: received.append(worker.stdout.read()), daemon=True)  # type: ignore[union-attr]
    taker.start()
    try:
        with (
            path.open("rb") as raw,
            io.TextIOWrapper(io.BufferedReader(_Head(raw, cut)), encoding="utf-8") as text,
        ):
            lines = _Counted(text)
            head = episodes_frame(iter_episode_lines(lines, source))
        taker.join()
        data = received[0] if received else b""
        tail = pl.read_ipc(io.BytesIO(data)) if worker.wait() == 0 and data else None
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        worker.stdout.close()
    if tail is None:  # the worker failed: this process reads the rest (and raises its error)
        with _tail_text(path, cut) as handle:
            tail = episodes_frame(iter_episode_lines(handle, source, first_line=lines.count + 1))
    return pl.concat([head, tail], how="vertical")


def _worker(path: str, start: int) -> int:
    """The worker's body: the log from byte ``start`` as a frame, Arrow IPC on stdout;
    exit 1 without output when it cannot (the parent then reads that part itself)."""
    try:
        with _tail_text(Path(path), start) as handle:
            frame = episodes_frame(iter_episode_lines(handle, path))
    except Exception:  # the parent re-reads this part and raises the real error
        return 1
    out = io.BytesIO()
    frame.write_ipc(out, compression="zstd")
    sys.stdout.buffer.write(out.getbuffer())
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1], int(sys.argv[2])))
