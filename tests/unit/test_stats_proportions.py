"""Wilson, exact McNemar and Newcombe's paired interval."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from pairlab.core.stats.proportions import (
    mcnemar_exact_p,
    newcombe_paired_interval,
    wilson_interval,
)


def test_wilson_known_values() -> None:
    low, high = wilson_interval(3, 5)
    assert (float(low), float(high)) == pytest.approx((0.2307, 0.8824), abs=5e-5)
    low, high = wilson_interval(0, 5)
    assert float(low) == 0.0
    assert float(high) == pytest.approx(0.4345, abs=5e-5)
    low, high = wilson_interval(5, 5)
    assert float(high) == 1.0


def test_wilson_matches_scipy_and_is_nan_without_observations() -> None:
    for k, n in [(1, 7), (12, 40), (39, 40)]:
        ref = stats.binomtest(k, n).proportion_ci(method="wilson")
        low, high = wilson_interval(k, n)
        assert (float(low), float(high)) == pytest.approx((ref.low, ref.high), rel=1e-12)
    low, high = wilson_interval(0, 0)
    assert math.isnan(float(low)) and math.isnan(float(high))


@given(st.integers(min_value=1, max_value=500), st.data())
def test_wilson_bounds_in_unit_interval_and_contain_p(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(min_value=0, max_value=n))
    low, high = (float(x) for x in wilson_interval(k, n))
    assert 0.0 <= low <= k / n <= high <= 1.0


def test_mcnemar_exact_matches_the_binomial_test() -> None:
    for b, c in [(1, 6), (0, 5), (7, 7), (3, 12)]:
        assert float(mcnemar_exact_p(b, c)) == pytest.approx(
            stats.binomtest(b, b + c, 0.5).pvalue, rel=1e-12
        )
    assert float(mcnemar_exact_p(0, 0)) == 1.0
    assert mcnemar_exact_p(np.array([1, 0]), np.array([6, 5])).shape == (2,)


def newcombe_scalar(a: int, b: int, c: int, d: int) -> tuple[float, float, float]:
    """Newcombe (1998) method 10, written out scalar by scalar (the oracle)."""
    n = a + b + c + d
    z = 1.959963984540054

    def wilson(k: int) -> tuple[float, float]:
        p = k / n
        centre = (2 * k + z * z) / (2 * (n + z * z))
        half = z * math.sqrt(z * z + 4 * k * (1 - p)) / (2 * (n + z * z))
        return centre - half, centre + half

    p1, p2 = (a + b) / n, (a + c) / n
    (l1, u1), (l2, u2) = wilson(a + b), wilson(a + c)
    if min(a + b, c + d, a + c, b + d) == 0:
        phi = 0.0
    else:
        cross = a * d - b * c
        num = cross - n / 2 if cross > n / 2 else (0.0 if cross >= 0 else cross)
        phi = num / math.sqrt((a + b) * (c + d) * (a + c) * (b + d))
    dl = math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    du = math.sqrt((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
    return p1 - p2, max(-1.0, p1 - p2 - dl), min(1.0, p1 - p2 + du)


@pytest.mark.parametrize("table", [(1, 1, 7, 12), (59, 6, 16, 80), (10, 5, 2, 3), (0, 0, 5, 0)])
def test_newcombe_matches_the_scalar_oracle(table: tuple[int, int, int, int]) -> None:
    diff, low, high = newcombe_paired_interval(*table)
    assert (float(diff), float(low), float(high)) == pytest.approx(
        newcombe_scalar(*table), abs=1e-12
    )


@given(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30), st.integers(0, 30))
def test_newcombe_contains_the_difference_and_mirrors(a: int, b: int, c: int, d: int) -> None:
    if a + b + c + d == 0:
        return
    diff, low, high = (float(x) for x in newcombe_paired_interval(a, b, c, d))
    assert -1.0 <= low <= diff <= high <= 1.0
    m_diff, m_low, m_high = (float(x) for x in newcombe_paired_interval(a, c, b, d))
    assert (m_diff, m_low, m_high) == pytest.approx((-diff, -high, -low), abs=1e-12)
