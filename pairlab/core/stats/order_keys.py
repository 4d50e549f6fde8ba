"""Tail order statistics of float32 rows, selected as integers.

NumPy selects 32-bit integers with its SIMD quickselect but float32 on a slower
path: ``ndarray.partition`` of a (60, 10,000) block took 0.19 ms as int32 against
0.44 ms as float32 here. The bootstrap needs only tail order statistics (the
2.5% and 97.5% ones), and the bit pattern of a float32 orders the tails without
any transformation:

* viewed as **int32**, non-negative floats keep their order and sit above every
  negative one, so the ``r``-th smallest float of a row is its ``r``-th smallest
  int32 whenever that element is non-negative (every element below it in float
  order is below it in int32 order and vice versa);
* viewed as **uint32**, negative floats (sign bit set) sit above every
  non-negative one ordered by magnitude, so the ``j``-th most negative float is the
  ``j``-th largest uint32 whenever that element is negative.

Each selection checks its sign condition on the selected element and the rare row
that fails (a tail that does not reach across zero) is selected as floats. Exact:
the views are the floats bit for bit; ``-0.0`` counts as negative, which only
matters between ``-0.0`` and ``+0.0``, equal values.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
Rows = NDArray[np.float32]


def _from_bits(bits: NDArray[np.int32] | NDArray[np.uint32]) -> FloatArray:
    return np.ascontiguousarray(bits).view(np.float32).astype(np.float64)


def _float_order(rows: Rows, ranks: list[int]) -> NDArray[np.float64]:
    """Order statistics ``ranks`` of each of ``rows`` (a copy), selected as floats."""
    part = np.partition(rows, ranks, axis=1)
    return part[:, ranks].astype(np.float64)


def lowest(values: Rows, rank: int, neighbour: bool = False) -> tuple[FloatArray, FloatArray]:
    """The ``rank``-th smallest value of each row (0-based) and, with ``neighbour``, the
    ``rank + 1``-th (else the same); reorders ``values``."""
    n_rep = values.shape[1]
    deepest = rank + 1 if neighbour else rank
    view = values.view(np.uint32)
    top = n_rep - 1 - deepest  # the deepest wanted rank, counted from the top of the uint32 order
    view.partition(top, axis=1)
    deep = view[:, top].copy()
    ok = deep >= np.uint32(0x80000000)  # negative: every element above it is more negative
    # The rank-th smallest is the smallest magnitude among the `rank + 1` most negative.
    shallow = view[:, top + 1 :].min(axis=1) if neighbour else deep
    first, second = (
        (_from_bits(shallow), _from_bits(deep)) if neighbour else (_from_bits(deep),) * 2
    )
    if not ok.all():
        bad = np.flatnonzero(~ok)
        got = _float_order(values[bad], [rank, deepest])
        first[bad], second[bad] = got[:, 0], got[:, 1]
    return first, second


def highest_rank(values: Rows, rank: int, neighbour: bool = False) -> tuple[FloatArray, FloatArray]:
    """The value of ascending ``rank`` (0-based, a high one) of each row and, with
    ``neighbour``, of ``rank + 1`` (else the same); reorders ``values``."""
    view = values.view(np.int32)
    view.partition(rank, axis=1)
    at = view[:, rank].copy()
    ok = at >= 0  # non-negative: its int32 rank is its float rank
    upper = view[:, rank + 1 :].min(axis=1) if neighbour else at
    first, second = _from_bits(at), _from_bits(upper)
    if not ok.all():
        bad = np.flatnonzero(~ok)
        ranks = [rank, rank + 1] if neighbour else [rank]
        got = _float_order(values[bad], ranks)
        first[bad], second[bad] = got[:, 0], got[:, -1]
    return first, second


def order_pair(values: Rows, k_low: int, k_high: int) -> tuple[FloatArray, FloatArray]:
    """Order statistics ``k_low`` (a low one) and ``k_high`` (a high one) of each row."""
    low, _ = lowest(values, k_low)
    high, _ = highest_rank(values, k_high)
    return low, high


def _lerp(a: FloatArray, b: FloatArray, t: float) -> FloatArray:
    # np.percentile's linear interpolation, written the same way, in float64.
    diff = b - a
    return np.asarray(b - diff * (1 - t) if t >= 0.5 else a + diff * t)


def percentile_pair(values: Rows, q_low: float, q_high: float) -> tuple[FloatArray, FloatArray]:
    """Linear-interpolated quantiles ``q_low`` < 0.5 < ``q_high`` of each row
    (``np.quantile``'s default method); reorders ``values``."""
    n_rep = values.shape[1]
    h_low, h_high = (n_rep - 1) * q_low, (n_rep - 1) * q_high
    f_low, f_high = math.floor(h_low), math.floor(h_high)
    if n_rep < 4 or f_low + 2 > f_high or f_high + 1 >= n_rep:
        got = np.quantile(values.astype(np.float64), [q_low, q_high], axis=1)
        return got[0], got[1]
    a, b = lowest(values, f_low, neighbour=True)
    c, d = highest_rank(values, f_high, neighbour=True)
    return _lerp(a, b, h_low - f_low), _lerp(c, d, h_high - f_high)
