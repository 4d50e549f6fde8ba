"""OpenBLAS's thread count, read and set at run time (NumPy's own OpenBLAS, through ctypes).

The resampling engine is its own parallelism (threads and worker processes, one cohort
each): a multi-threaded GEMM inside it only competes with the other cohorts. While
:func:`single_threaded` holds, OpenBLAS runs one thread in this process and
:func:`one_thread` is true, so :func:`pairlab.core.stats.studentized.studentized_sums`
multiplies a whole cache block of resamples per call instead of blocks small enough to
stay below OpenBLAS's multithreading threshold: measured (100 x 25 by 25 x 10,000,
float32, one thread) 0.97 ms in blocks of 104 resamples against 0.64 ms in blocks of
1,248, the same bits (one output element is one dot product, in the same order).

Where NumPy's OpenBLAS cannot be found (another BLAS, another build), nothing is set
and the small blocks stay: correct either way, only slower.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_STATE: dict[str, Any] = {"lib": None, "looked": False, "holders": 0, "before": None}
_LOCK = threading.Lock()
# NumPy wheels link scipy-openblas with symbol prefix and 64-bit ints (numpy >= 2)
_GET = (
    "scipy_openblas_get_num_threads64_",
    "openblas_get_num_threads64_",
    "openblas_get_num_threads",
)
_SET = (
    "scipy_openblas_set_num_threads64_",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


def _library() -> tuple[Any, Any] | None:
    """NumPy's OpenBLAS ``(get, set)`` functions, or None when they cannot be found."""
    if _STATE["looked"]:
        return _STATE["lib"]  # type: ignore[no-any-return]
    _STATE["looked"] = True
    import numpy as np

    libs = Path(np.__file__).resolve().parent.parent / "numpy.libs"
    for path in sorted(libs.glob("*openblas*.so*")) if libs.is_dir() else []:
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            continue
        get = next((getattr(lib, n) for n in _GET if hasattr(lib, n)), None)
        put = next((getattr(lib, n) for n in _SET if hasattr(lib, n)), None)
        if get is not None and put is not None:
            get.restype, put.restype = ctypes.c_int, None
            put.argtypes = [ctypes.c_int]
            _STATE["lib"] = (get, put)
            break
    return _STATE["lib"]  # type: ignore[no-any-return]


def threads() -> int | None:
    """OpenBLAS's thread count in this process (None: not found)."""
    found = _library()
    return None if found is None else int(found[0]())


def one_thread() -> bool:
    """Whether a GEMM of this process runs on one thread (:func:`single_threaded` holds,
    or OpenBLAS was started with one thread)."""
    return _STATE["holders"] > 0 or threads() == 1


@contextmanager
def single_threaded() -> Iterator[bool]:
    """OpenBLAS on one thread while this holds (nested and concurrent holders share it;
    the thread count is restored when the last ends); yields whether it could be set."""
    found = _library()
    if found is None:
        yield False
        return
    get, put = found
    with _LOCK:
        if _STATE["holders"] == 0:
            _STATE["before"] = int(get())
            put(1)
        _STATE["holders"] += 1
    try:
        yield True
    finally:
        with _LOCK:
            _STATE["holders"] -= 1
            if _STATE["holders"] == 0 and _STATE["before"] is not None:
                put(_STATE["before"])
