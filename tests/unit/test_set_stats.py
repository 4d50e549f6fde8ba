"""Issue 28: many column sets' statistics side by side are each set's own, bit for bit.

:func:`pairlab.core.stats.set_stats.set_statistics` joins sets of the same n and layout
into one array; NumPy sums a Fortran-ordered column (and an (n, 1) array) pairwise
along its contiguous memory and a C-ordered array row by row, so the sets here come in
both layouts, one column or several, with ties, constants, huge and signed values, at
2 to 40 rows, and one set that is neither layout.
"""

from __future__ import annotations

import numpy as np

from pairlab.core.stats.one_cohort import student_t
from pairlab.core.stats.set_stats import set_statistics
from pairlab.core.stats.skew_gate import sample_skewness
from pairlab.core.stats.studentized import column_stats


def _set(rng: np.random.Generator, n: int, columns: int) -> np.ndarray:
    kinds = [
        rng.lognormal(8.0, 1.0, n) * rng.choice([-1.0, 1.0]),
        rng.integers(0, 3, n).astype(float),  # ties
        np.full(n, 3.5),  # no spread
        rng.normal(0.0, 1.0, n) * 1e9,
        rng.normal(0.0, 1e-3, n) + 1e6,  # large mean, small spread
        np.round(rng.lognormal(5.0, 0.3, n)),
    ]
    return np.stack([kinds[int(rng.integers(0, len(kinds)))] for _ in range(columns)], axis=1)


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def test_sets_side_by_side_give_each_sets_own_bits() -> None:
    rng = np.random.default_rng(28)
    sets = []
    for n in (2, 3, 5, 8, 9, 10, 17, 25, 40):
        for columns in (1, 2, 7, 55):
            for _ in range(2):
                data = _set(rng, n, columns)
                sets.append(np.asfortranarray(data))
                sets.append(np.ascontiguousarray(data))
    sets.append(np.asfortranarray(_set(rng, 25, 12))[:, ::2])  # neither layout
    got = set_statistics(sets)
    assert len(got) == len(sets)
    for values, mine in zip(sets, got, strict=True):
        ref = column_stats(values)
        assert _bits(mine.skewness) == _bits(sample_skewness(values))
        assert _bits(mine.t_stat) == _bits(student_t(values))
        for name in ("estimate", "se", "degenerate", "t_obs"):
            assert _bits(getattr(mine.columns, name)) == _bits(getattr(ref, name)), name
        assert _bits(mine.centered) == _bits((values - ref.estimate).astype(np.float32))
        assert mine.finite


def test_the_layouts_really_sum_differently() -> None:
    """The reason for grouping by layout: the same column summed along contiguous memory
    (pairwise) and row by row can differ, so a set must be joined in its own layout."""
    rng = np.random.default_rng(5)
    differ = 0
    for _ in range(200):
        data = rng.normal(0.0, 1.0, (40, 2)) * 10.0 ** rng.integers(-3, 9, 2)
        f, c = np.asfortranarray(data), np.ascontiguousarray(data)
        differ += _bits(f.mean(axis=0)) != _bits(c.mean(axis=0))
    assert differ > 0


def test_a_set_with_a_non_finite_value_is_flagged() -> None:
    good = np.asfortranarray(np.arange(12.0).reshape(6, 2))
    bad = good.copy(order="F")
    bad[2, 1] = np.inf
    got = set_statistics([good, bad, good])
    assert [s.finite for s in got] == [True, False, True]
