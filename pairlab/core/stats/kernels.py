"""Compiled (numba) loops of the resampling kernel, bit for bit the NumPy path's results.

Two steps of :mod:`pairlab.core.stats.bootstrap` and
:mod:`pairlab.core.stats.studentized` were many small NumPy calls over arrays that
fit in cache; here each is one loop (and releases the GIL, so cohorts in threads run
in parallel):

* :func:`draw_counts`: the (B, n) resample counts, drawn from the caller's PCG64
  generator exactly as ``Generator.integers(0, n, dtype=np.uint16)`` draws them
  (NumPy's buffered Lemire rejection on 16-bit halves of 32-bit halves of PCG64's
  XSL-RR 64-bit outputs, the 128-bit state stepped in 64-bit halves), blocks of rows
  as :func:`pairlab.core.stats.bootstrap.draw_resample_indices`, and counted
  in the same pass (NumPy: the draws, then an offset ``np.add`` + ``np.bincount`` + a
  cast per block); the generator is left in the state NumPy's draws leave it;
* :func:`counts_from_indices`: the counts from indices already drawn;
* :func:`studentize_block`: from one block of the product ``[S1 | nS2]``, the
  resample sums, ``t* / sqrt(n - 1)`` and the count of ``t*`` below the observed ``t``
  (NumPy: five elementwise passes, a comparison and a reduction).

The matrix products (OpenBLAS through ``np.matmul``,
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

import importlib.util
import os
import threading
from typing import Any

import numpy as np
from numpy.typing import NDArray

ENV_NUMPY = "PAIRLAB_NUMPY_KERNELS"


def compiled_enabled() -> bool:
    """Whether the compiled loops are used (default; numba installed) rather than the
    NumPy reference."""
    if os.environ.get(ENV_NUMPY, "").strip() in ("1", "true", "yes"):
        return False
    return importlib.util.find_spec("numba") is not None


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


_M_HI = np.uint64(2549297995355413924)  # PCG64's 128-bit multiplier, high and low halves
_M_LO = np.uint64(4865540595714422341)


def _draw_counts_loop(
    st: Any, n: int, n_resamples: int, rows: int, out: Any
) -> None:  # pragma: no cover - compiled
    # st: uint64[5] = state high, state low, inc high, inc low, has_uint32 << 32 | uinteger
    mask32 = np.uint64(0xFFFFFFFF)
    s_hi, s_lo, i_hi, i_lo = st[0], st[1], st[2], st[3]
    has32 = (st[4] >> np.uint64(32)) != np.uint64(0)
    uinteger = st[4] & mask32
    rng_excl = np.uint32(n)
    threshold = np.uint32((np.uint32(65535) - np.uint32(n - 1)) % rng_excl)
    b_lo, b_hi = _M_LO & mask32, _M_LO >> np.uint64(32)
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        buf = np.uint32(0)  # one fill call of NumPy: a fresh 16-bit buffer
        bcnt = 0
        for b in range(start, stop):
            for i in range(n):
                out[b, i] = 0.0
            for _ in range(n):
                while True:
                    if bcnt == 0:
                        if has32:  # PCG64's next_uint32: the stored upper half
                            has32 = False
                            buf = np.uint32(uinteger)
                        else:  # state = state * M + inc (mod 2^128), XSL-RR output
                            a_lo, a_hi = s_lo & mask32, s_lo >> np.uint64(32)
                            p0, p1 = a_lo * b_lo, a_lo * b_hi
                            p2, p3 = a_hi * b_lo, a_hi * b_hi
                            mid = (p0 >> np.uint64(32)) + (p1 & mask32) + (p2 & mask32)
                            high = p3 + (p1 >> np.uint64(32)) + (p2 >> np.uint64(32))
                            high += mid >> np.uint64(32)
                            n_lo = s_lo * _M_LO
                            n_hi = high + s_hi * _M_LO + s_lo * _M_HI
                            s_lo = n_lo + i_lo
                            s_hi = n_hi + i_hi + (np.uint64(1) if s_lo < n_lo else np.uint64(0))
                            x = s_hi ^ s_lo
                            r = s_hi >> np.uint64(58)
                            word = (x >> r) | (x << ((np.uint64(64) - r) & np.uint64(63)))
                            has32 = True
                            uinteger = word >> np.uint64(32)
                            buf = np.uint32(word & mask32)
                        bcnt = 1
                    else:
                        buf = np.uint32(buf >> np.uint32(16))
                        bcnt -= 1
                    m = np.uint32(buf & np.uint32(0xFFFF)) * rng_excl  # Lemire
                    leftover = m & np.uint32(0xFFFF)
                    if leftover >= rng_excl or leftover >= threshold:
                        break
                out[b, m >> np.uint32(16)] += 1.0
    st[0], st[1] = s_hi, s_lo
    st[4] = ((np.uint64(1) << np.uint64(32)) | uinteger) if has32 else uinteger


_LOCK = threading.Lock()


def _compiled(name: str) -> Any:
    found = _COMPILED.get(name)
    if found is not None:
        return found
    with _LOCK:
        found = _COMPILED.get(name)
        if found is not None:
            return found
        loops = {"counts": _counts_loop, "studentize": _studentize_loop, "draw": _draw_counts_loop}
        found = _COMPILED[name] = _jit(loops[name])
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


_MASK64 = (1 << 64) - 1


def draw_counts(
    rng: np.random.Generator, n: int, n_resamples: int, rows: int, out: NDArray[np.floating[Any]]
) -> None:
    """``out`` = the (n_resamples, n) counts of ``rng.integers(0, n, (k, n), np.uint16)``
    drawn in blocks of ``rows`` rows (2 <= n <= 65535; ``rng`` a PCG64 generator, left
    in the state those draws leave it)."""
    state = rng.bit_generator.state
    if state["bit_generator"] != "PCG64" or not 2 <= n <= 0xFFFF:
        raise ValueError("draw_counts needs a PCG64 generator and 2 <= n <= 65535")
    value, inc = int(state["state"]["state"]), int(state["state"]["inc"])
    st = np.array(
        [
            value >> 64,
            value & _MASK64,
            inc >> 64,
            inc & _MASK64,
            (int(state["has_uint32"]) << 32) | int(state["uinteger"]),
        ],
        dtype=np.uint64,
    )
    _compiled("draw")(st, n, n_resamples, rows, out)
    rng.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": (int(st[0]) << 64) | int(st[1]), "inc": inc},
        "has_uint32": int(st[4]) >> 32,
        "uinteger": int(st[4]) & 0xFFFFFFFF,
    }


def warm_up() -> None:
    """Import numba and load (or compile) every loop for the argument types the analysis
    passes (about 2 s of CPU in a fresh process: imports, numba's type system, the
    on-disk cache)."""
    from pairlab.core.stats.seeds import make_rng

    out = np.empty((4, 3), dtype=np.float32)
    draw_counts(make_rng("warm-up"), 3, 4, 2, out)
    counts_from_indices(np.zeros((4, 3), dtype=np.uint16), out)
    both = np.ones((4, 5), dtype=np.float32)
    target = np.zeros((2, 1), dtype=np.float32)[:, 0]  # a column view, as the caller's
    rows = np.empty((2, 5), dtype=np.float32)
    studentize_block(both, 5, target, rows, rows.copy(), 0, np.zeros(2, dtype=np.int64))


def warm_up_in_background() -> threading.Thread:
    """:func:`warm_up` in a daemon thread (it overlaps work that releases the GIL, such
    as polars building the pair frame); the loops are ready when it ends."""
    thread = threading.Thread(target=warm_up, name="pairlab-kernels-warm-up", daemon=True)
    thread.start()
    return thread
