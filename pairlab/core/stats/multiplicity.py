"""Multiplicity control: adjusted p-values for a family of tests, per row.

Each row of ``p`` is one family (e.g. a cohort's secondary tests); NaN marks a
test that was not performed and is not counted in the family. Vectorised over
rows: a run's 10,000 cohorts are adjusted in one call.

* Holm (1979) step-down: controls the family-wise error rate at alpha under
  any dependence between the tests. ``p_adj(i) = max_{j <= i} min(1, (m - j + 1) p(j))``
  over the sorted p-values.
* Benjamini-Hochberg (1995) step-up: controls the false discovery rate at alpha
  for independent or positively dependent tests (under the full null it equals
  the family-wise rate). ``p_adj(i) = min_{j >= i} min(1, m / j * p(j))``.

A test is rejected when its adjusted p-value is at most alpha.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

Correction = Literal["holm", "bh"]
CORRECTIONS: tuple[Correction, ...] = ("holm", "bh")


def adjust_pvalues(p: ArrayLike, method: Correction = "holm") -> NDArray[np.float64]:
    """Adjusted p-values of each row of ``p`` (1-D: one family); NaN stays NaN."""
    if method not in CORRECTIONS:
        raise ValueError(f"unknown multiplicity correction {method!r} (holm or bh)")
    values = np.asarray(p, dtype=np.float64)
    one_row = values.ndim == 1
    rows = values[None, :] if one_row else values
    if rows.size == 0:
        return values.copy()
    order = np.argsort(rows, axis=1, kind="stable")  # NaN sorts last
    ranked = np.take_along_axis(rows, order, axis=1)
    m = np.sum(~np.isnan(rows), axis=1, keepdims=True).astype(np.float64)
    rank = np.arange(1, rows.shape[1] + 1, dtype=np.float64)[None, :]
    with np.errstate(invalid="ignore"):
        if method == "holm":
            scaled = np.minimum(1.0, (m - rank + 1.0) * ranked)
            adjusted = np.fmax.accumulate(scaled, axis=1)
        else:
            scaled = np.minimum(1.0, m / rank * ranked)
            adjusted = np.fmin.accumulate(scaled[:, ::-1], axis=1)[:, ::-1]
    adjusted = np.where(np.isnan(ranked), np.nan, adjusted)
    out = np.empty_like(adjusted)
    np.put_along_axis(out, order, adjusted, axis=1)
    return out[0] if one_row else out
