"""Compiled (numba) loops of the resampling kernel, bit for bit the NumPy path's results.

Two steps of :mod:`pairlab.core.stats.bootstrap` and
:mod:`pairlab.core.stats.studentized` were many small NumPy calls over arrays that
fit in cache; here each is one loop (and releases the GIL, so cohorts in threads run
in parallel):

* :func:`counts_from_indices`: the (B, n) resample counts from the drawn indices
  (NumPy: an offset ``np.add`` + ``np.bincount`` + a cast per block of rows);
* :func:`studentize_block`: from one block of the product ``[S1 | nS2]``, the
  resample sums, ``t* / sqrt(n - 1)`` and the count of ``t*`` below the observed ``t``
  (NumPy: five elementwise passes, a comparison and a reduction).

The draws (NumPy's generator), the matrix products (OpenBLAS through ``np.matmul``,
same shapes) and the order-statistic selection (NumPy's SIMD ``partition``) are left
as they are: they were already at the machine's speed, and keeping them keeps the
numbers. What the loops compute is the same IEEE arithmetic in the same order:
counts are small integers (exact in float32); each float32 operation is rounded to
float32 before the next (``np.float32(...)``; no fast-math, so no fused
multiply-add contraction); a result computed in float64 and rounded once to float32
is the correctly rounded float32 result for ``+ - * / sqrt`` (53 >= 2 x 24 + 2
bits). ``tests/unit/test_stats_kernels.py`` checks the two paths agree bit for bit
on varied inputs, and an analysis through both gives byte-identical JSON.

Compiled on first use and cached on disk (numba's ``cache=True``: next to this file,
else in the user's cache directory); ``PAIRLAB_NUMPY_KERNELS=1`` selects the NumPy
path (the reference).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from numpy.typing import NDArray

ENV_NUMPY = "PAIRLAB_NUMPY_KERNELS"


def compiled_enabled() -> bool:
    """Whether the compiled loops are used (default) rather than the NumPy reference."""
    return os.environ.get(ENV_NUMPY, "").strip() not in ("1", "true", "yes")


def _jit(fn: Any) -> Any:
    import numba  # imported on first use

    return numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")(fn)


_COMPILED: dict[str, Any] = {}


def _counts_loop(idx: Any, out: Any) -> None:  # pragma: no cover - compiled
    rows, n = idx.shape
    for b in range(rows):
        for i in range(n):
            out[b, i] = 0.0
        for j in range(n):
            out[b, idx[b, j]] += 1.0


def _studentize_loop(
    both: Any, width: int, target: Any, tiny: Any, s1: Any, tstar: Any, start: int, below: Any
) -> None:  # pragma: no cover - compiled
    columns = target.shape[0]
    for c in range(columns):
        t_c = target[c]
        # contiguous rows: the loop below compiles to SIMD (8 resamples per instruction)
        a_row, q_row = both[c, :width], both[columns + c, :width]
        s1_row, t_row = s1[c, start : start + width], tstar[c, start : start + width]
        count = 0
        for b in range(width):
            a = a_row[b]
            # NumPy: scratch = s1 * s1; scratch = nS2 - scratch; maximum(scratch, tiny)
            # (NaN stays NaN); sqrt; out = s1 / scratch; each rounded to float32.
            sc = np.float32(a * a)
            sc = np.float32(q_row[b] - sc)
            sc = tiny if sc < tiny else sc
            sc = np.float32(np.sqrt(sc))
            t = np.float32(a / sc)
            s1_row[b] = a
            t_row[b] = t
            count += t < t_c
        below[c] += count


def _compiled(name: str) -> Any:
    found = _COMPILED.get(name)
    if found is None:
        found = _COMPILED[name] = _jit(
            {"counts": _counts_loop, "studentize": _studentize_loop}[name]
        )
    return found


def counts_from_indices(idx: NDArray[np.integer[Any]], out: NDArray[np.floating[Any]]) -> None:
    """``out[b, i]`` = how often ``i`` occurs in ``idx[b]`` ((rows, n) each)."""
    _compiled("counts")(idx, out)


def studentize_block(
    both: NDArray[np.floating[Any]],
    width: int,
    target: NDArray[np.floating[Any]],
    s1: NDArray[np.floating[Any]],
    tstar: NDArray[np.floating[Any]],
    start: int,
    below: NDArray[np.int64],
) -> None:
    """From ``both[:, :width]`` = ``[S1 | nS2]`` of a block of resamples: ``s1[:, start:]``,
    ``tstar[:, start:]`` (``S1 / sqrt(nS2 - S1^2)``) and ``below += #(t* < target)``."""
    tiny = both.dtype.type(np.finfo(both.dtype).tiny)
    _compiled("studentize")(both, width, target, tiny, s1, tstar, start, below)
