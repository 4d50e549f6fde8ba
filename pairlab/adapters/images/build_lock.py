"""One builder per image tag at a time, across processes: a file lock per tag.

Parallel test workers (pytest-xdist), a ``pairlab images build`` and a first use of the
Docker backend (``ensure_image``) in another process may ask for the same image at the same
moment. Building takes ``flock`` on ``<lock dir>/<tag, sanitized>.lock``
(``$PAIRLAB_LOCK_DIR``, default ``~/.cache/pairlab/locks``); the caller checks the image
again once it holds the lock, so the second builder waits and then reuses the image the
first built. The kernel drops the lock when its holder exits, killed or not: a crashed
build never leaves a stale lock. flock locks belong to the open file, so two threads of
one process exclude each other too.
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

LOCK_DIR_ENV: Final = "PAIRLAB_LOCK_DIR"


def lock_dir() -> Path:
    configured = os.environ.get(LOCK_DIR_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "pairlab" / "locks"


def lock_path(tag: str) -> Path:
    """The lock file of ``tag``: every character but ``[A-Za-z0-9._-]`` becomes ``_``."""
    return lock_dir() / (re.sub(r"[^A-Za-z0-9._-]", "_", tag) + ".lock")


@contextmanager
def tag_lock(tag: str, log: Callable[[str], None]) -> Iterator[None]:
    """Hold ``tag``'s build lock for the block; says so on ``log`` when it has to wait."""
    path = lock_path(tag)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"{tag}: another build holds {path}; waiting for it")
            fcntl.flock(fd, fcntl.LOCK_EX)
            log(f"{tag}: got the build lock")
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock
