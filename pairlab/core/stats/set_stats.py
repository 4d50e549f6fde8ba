"""The per-set statistics of many column sets at once, bit for bit each set's own.

An analysis finishes each cohort's column sets (the columns observed in the same
pairs, (n, C) values each) with the same handful of statistics: the sample skewness
(:func:`~pairlab.core.stats.skew_gate.sample_skewness`), Student's t
(:func:`~pairlab.core.stats.one_cohort.student_t`), :func:`column_stats` and the
centered float32 values the resampling multiplies. Each is some ten small NumPy calls;
:func:`set_statistics` calls them once per group of sets placed side by side as one
(n, sum C) array instead of once per set.

The rule that keeps every set's bits: each function reduces over axis 0 column by
column and is otherwise elementwise, and a column's reduction depends only on how
NumPy walks that column, which depends on the array's layout, not its width:

* a **Fortran-ordered** (n, C) array (each column contiguous; every (n, 1) array is
  one) has each column summed on its own along contiguous memory (NumPy's pairwise
  summation); placed side by side in a Fortran-ordered (n, sum C) array, each column is
  summed the same way;
* a **C-ordered** (n, C) array with C >= 2 is summed row after row into the column
  totals (one addition per row, in row order); placed side by side in a C-ordered
  (n, sum C) array, the same.

So sets are grouped by (n, layout) and joined in that layout; a set with neither layout
is computed on its own. ``tests/unit/test_set_stats.py`` checks the bits on both
layouts, single columns, ties, constants and 2 to 40 rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from pairlab.core.stats.one_cohort import student_t
from pairlab.core.stats.skew_gate import sample_skewness
from pairlab.core.stats.studentized import ColumnStats, column_stats

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class SetStatistics:
    """One set's statistics (arrays of its column count)."""

    skewness: FloatArray
    t_stat: FloatArray
    columns: ColumnStats
    centered: NDArray[np.float32]  # (n, C): values minus their means, as float32
    finite: bool  # every value finite


def _layout(values: FloatArray) -> str | None:
    if values.dtype != np.float64 or values.ndim != 2:
        return None
    if values.flags.f_contiguous:
        return "F"
    if values.flags.c_contiguous and values.shape[1] >= 2:
        return "C"
    return None


def _of_block(wide: FloatArray, finite: bool = True) -> SetStatistics:
    if not finite:  # the caller refuses the set: its numbers, without NumPy's warnings
        with np.errstate(all="ignore"):
            return replace(_of_block(wide), finite=False)
    described = column_stats(wide)
    return SetStatistics(
        sample_skewness(wide),
        student_t(wide),
        described,
        (wide - described.estimate).astype(np.float32),
        True,
    )


def set_statistics(sets: Sequence[FloatArray]) -> list[SetStatistics]:
    """:class:`SetStatistics` of each of ``sets`` ((n, C) float64 each), computed once per
    group of sets sharing n and layout (see the module docstring); the same bits as
    computing each set alone."""
    groups: dict[tuple[int, str], list[int]] = {}
    out: list[SetStatistics | None] = [None] * len(sets)
    for i, values in enumerate(sets):
        layout = _layout(values)
        if layout is None:
            data = np.asarray(values, dtype=np.float64)
            out[i] = _of_block(data, bool(np.isfinite(data).all()))
        else:
            groups.setdefault((values.shape[0], layout), []).append(i)
    for (n, layout), members in groups.items():
        widths = [sets[i].shape[1] for i in members]
        if len(members) == 1:
            wide = sets[members[0]]
        else:
            wide = np.empty((n, sum(widths)), order=layout)  # type: ignore[call-overload]
            np.concatenate([sets[i] for i in members], axis=1, out=wide)
        finite = np.asarray(np.isfinite(wide).all(axis=0))
        if not finite.all():  # rare: each set on its own, the finite ones as usual
            for i, width, first in zip(members, widths, np.cumsum([0, *widths]), strict=False):
                out[i] = _of_block(sets[i], bool(finite[first : first + width].all()))
            continue
        if len(members) == 1:
            out[members[0]] = _of_block(wide)
            continue
        got = _of_block(wide)
        start = 0
        for i, width in zip(members, widths, strict=True):
            cut = slice(start, start + width)
            c = got.columns
            out[i] = SetStatistics(
                got.skewness[cut],
                got.t_stat[cut],
                ColumnStats(c.estimate[cut], c.se[cut], c.degenerate[cut], c.t_obs[cut]),
                got.centered[:, cut],
                True,
            )
            start += width
    return [s for s in out if s is not None]
