"""Running one command as its own process group, with a timeout that leaves nothing behind.

The command gets a new session (``start_new_session=True``) so the whole tree
can be signalled at once. On timeout the group gets SIGTERM, a short grace, then
SIGKILL -- children that ignore SIGTERM die too. After the command ends (for any
reason) the group is killed again, and a sweep of ``/proc`` kills any process
still carrying this launch's private tag in its environment (a child that called
``setsid`` to escape the group). stdout and stderr are captured separately by
two reader threads, each bounded in memory (the rest is drained and dropped).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pairlab.adapters.backends.base import KILL_GRACE_S, STREAM_CAP_BYTES, RunOutcome

TAG_VAR = "PAIRLAB_PROCESS_TAG"


@dataclass
class StreamCapture:
    """One output stream kept up to ``cap`` bytes; the rest is drained and flagged."""

    cap: int
    data: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        if len(chunk) > room:
            self.truncated = True

    def text(self) -> str:
        return bytes(self.data).decode("utf-8", errors="replace")


def _drain(fd: int, capture: StreamCapture) -> None:
    try:
        while chunk := os.read(fd, 65536):
            capture.feed(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


@dataclass(frozen=True)
class _Proc:
    pid: int
    pgrp: int
    state: str


def _processes() -> Iterator[_Proc]:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        yield _Proc(pid=int(entry.name), state=fields[0], pgrp=int(fields[2]))


def _carries_tag(pid: int, needle: bytes) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return needle in environ.split(b"\0")


def pid_alive(pid: object) -> bool:
    """Whether a process with this pid exists on this host. A pid that is not a positive
    integer never does (``kill(0, ...)`` would signal our own process group instead)."""
    try:
        number = int(pid)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return False
    if number <= 0:
        return False
    try:
        os.kill(number, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


def live_group_members(pgid: int) -> list[int]:
    """Processes of the group that are not zombies (zombies cannot run anything)."""
    return [p.pid for p in _processes() if p.pgrp == pgid and p.state != "Z"]


def tagged_processes(tag: str) -> list[int]:
    needle = f"{TAG_VAR}={tag}".encode()
    me = os.getpid()
    return [
        p.pid
        for p in _processes()
        if p.pid != me and p.state != "Z" and _carries_tag(p.pid, needle)
    ]


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _wait_gone(pgid: int, tag: str, deadline: float) -> bool:
    while time.monotonic() < deadline:
        if not live_group_members(pgid) and not tagged_processes(tag):
            return True
        time.sleep(0.05)
    return False


def terminate_tree(pgid: int, tag: str, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM the group, wait ``grace_s``, then SIGKILL the group and every tagged straggler."""
    _signal_group(pgid, signal.SIGTERM)
    for pid in tagged_processes(tag):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    if _wait_gone(pgid, tag, time.monotonic() + grace_s):
        return
    kill_tree(pgid, tag)


def kill_tree(pgid: int, tag: str) -> None:
    for _ in range(50):
        _signal_group(pgid, signal.SIGKILL)
        stragglers = tagged_processes(tag)
        for pid in stragglers:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if _wait_gone(pgid, tag, time.monotonic() + 0.2):
            return


def _exit_code(returncode: int) -> int:
    """Signals as the shell and Docker report them (SIGKILL -> 137)."""
    return 128 - returncode if returncode < 0 else returncode


def run_process(
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout_s: float,
    cap_bytes: int = STREAM_CAP_BYTES,
) -> RunOutcome:
    """Run ``argv`` to completion or timeout; never raises for what the command does."""
    tag = uuid.uuid4().hex
    full_env = {**env, TAG_VAR: tag}
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    started_at = datetime.now(UTC)
    start_ns = time.monotonic_ns()
    try:
        proc = subprocess.Popen(
            argv,
            env=full_env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        return RunOutcome(
            exit_code=None,
            crashed=False,
            error=f"could not start {argv[0]!r}: {exc.strerror or exc}",
            started_at=started_at,
            ended_at=datetime.now(UTC),
        )
    finally:
        # the child holds its own copies; ours must close so EOF arrives
        with contextlib.suppress(OSError):
            os.close(out_w)
        with contextlib.suppress(OSError):
            os.close(err_w)
    out, err = StreamCapture(cap_bytes), StreamCapture(cap_bytes)
    readers = [
        threading.Thread(target=_drain, args=(out_r, out), daemon=True),
        threading.Thread(target=_drain, args=(err_r, err), daemon=True),
    ]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        terminate_tree(proc.pid, tag)
        proc.wait()
    end_ns = time.monotonic_ns()
    ended_at = datetime.now(UTC)
    # whatever the command left running in its group or escaped with its tag goes too
    kill_tree(proc.pid, tag)
    for reader in readers:
        reader.join(timeout=5)
    code = _exit_code(proc.returncode)
    return RunOutcome(
        exit_code=None if timed_out else code,
        timed_out=timed_out,
        crashed=not timed_out and code != 0,
        latency_ms=(end_ns - start_ns) / 1e6,
        started_at=started_at,
        ended_at=ended_at,
        stdout=out.text(),
        stderr=err.text(),
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
    )
