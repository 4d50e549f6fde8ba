"""The engine's column patterns (columns observed in the same pairs) are NumPy's
``np.unique(seen.T, axis=0, return_inverse=True)``: the same patterns in the same order."""

from __future__ import annotations

import numpy as np
import pytest

from pairlab.core.analysis.engine import _distinct_columns


@pytest.mark.parametrize("seed", range(4))
def test_distinct_columns_are_numpys_unique_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(300):
        n, columns = int(rng.integers(1, 70)), int(rng.integers(1, 80))
        if rng.random() < 0.5:  # a few patterns shared by many columns, as in a cohort
            base = rng.random((n, 3)) > 0.3
            seen = base[:, rng.integers(0, 3, columns)]
        else:
            seen = rng.random((n, columns)) > rng.random() ** 3
        if rng.random() < 0.3:
            seen = np.asfortranarray(seen)
        ref, ref_which = np.unique(seen.T, axis=0, return_inverse=True)
        got, which = _distinct_columns(seen)
        assert got.dtype == ref.dtype and got.shape == ref.shape
        assert (got == ref).all() and (which == ref_which.ravel()).all()
