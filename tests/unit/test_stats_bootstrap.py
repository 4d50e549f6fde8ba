"""Bootstrap intervals: agreement with a plain NumPy reference, determinism, BCa."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from pairlab.core.stats.bootstrap import bootstrap_mean_intervals, draw_resample_indices
from pairlab.core.stats.seeds import derive_seed, make_rng

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
samples = st.lists(finite, min_size=2, max_size=30)


def reference_percentile(values: np.ndarray, seed: int, n_resamples: int) -> np.ndarray:
    """The textbook loop-free bootstrap: gather resamples, mean, np.percentile."""
    idx = draw_resample_indices(np.random.default_rng(seed), len(values), n_resamples)
    return np.percentile(values[idx].mean(axis=1), [2.5, 97.5])


def test_percentile_matches_the_plain_numpy_bootstrap_for_every_column() -> None:
    data = np.random.default_rng(1).lognormal(size=(15, 4)) * 1000
    got = bootstrap_mean_intervals(
        data, np.random.default_rng(42), n_resamples=10_000, precision="float64"
    )
    for col in range(4):
        expected = reference_percentile(data[:, col], 42, 10_000)
        assert got.low[col] == pytest.approx(expected[0], rel=1e-12)
        assert got.high[col] == pytest.approx(expected[1], rel=1e-12)
    assert got.estimate == pytest.approx(data.mean(axis=0))


def test_float32_sums_agree_with_the_float64_reference() -> None:
    # Token-like data: large level, small paired differences around it.
    data = 2_000_000 + np.random.default_rng(8).normal(-300, 900, size=(25, 6))
    fast = bootstrap_mean_intervals(data, np.random.default_rng(3))
    exact = bootstrap_mean_intervals(data, np.random.default_rng(3), precision="float64")
    spread = np.abs(data - data.mean(axis=0)).max()
    assert np.array_equal(fast.estimate, exact.estimate)
    assert np.abs(fast.low - exact.low).max() < 1e-6 * spread
    assert np.abs(fast.high - exact.high).max() < 1e-6 * spread


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_single_column_path_equals_the_shared_matrix_path(precision: str) -> None:
    data = np.random.default_rng(2).normal(size=(9, 2))
    kw = {"n_resamples": 2000, "precision": precision}
    both = bootstrap_mean_intervals(data, np.random.default_rng(5), **kw)  # type: ignore[arg-type]
    alone = bootstrap_mean_intervals(data[:, :1], np.random.default_rng(5), **kw)  # type: ignore[arg-type]
    assert alone.low[0] == pytest.approx(both.low[0], rel=1e-6)
    assert alone.high[0] == pytest.approx(both.high[0], rel=1e-6)


def test_same_seed_same_interval_and_other_seed_other_interval() -> None:
    data = np.random.default_rng(3).normal(size=(10, 3))
    a = bootstrap_mean_intervals(data, make_rng("run-1", ("sim", "1.0"), "totalTokens"))
    b = bootstrap_mean_intervals(data, make_rng("run-1", ("sim", "1.0"), "totalTokens"))
    c = bootstrap_mean_intervals(data, make_rng("run-2", ("sim", "1.0"), "totalTokens"))
    assert np.array_equal(a.low, b.low) and np.array_equal(a.high, b.high)
    assert not np.array_equal(a.low, c.low)


def test_seed_is_a_stable_function_of_names_only() -> None:
    # Pinned: a change of derivation must be deliberate (bump SEED_DOMAIN).
    assert derive_seed("run", ("a", "b"), "m") == derive_seed("run", ["a", "b"], "m")
    assert derive_seed("run", ("a", "b"), "m") != derive_seed("run", ("a", "b"), "n")
    assert derive_seed("r") == 0xF34408C1663E3BB66D1C0B77BB3DB067


def test_integer_and_float_spellings_give_identical_intervals() -> None:
    ints = np.array([[3], [1], [4], [1], [5], [9]])
    floats = ints.astype(np.float64)
    a = bootstrap_mean_intervals(ints, np.random.default_rng(9))
    b = bootstrap_mean_intervals(floats, np.random.default_rng(9))
    assert (a.low[0], a.high[0]) == (b.low[0], b.high[0])


def test_all_equal_values_give_the_degenerate_interval_flagged() -> None:
    data = np.full((6, 2), 7.0)
    for method in ("percentile", "bca"):
        got = bootstrap_mean_intervals(data, np.random.default_rng(0), method=method)
        assert got.low.tolist() == [7.0, 7.0] and got.high.tolist() == [7.0, 7.0]
        assert got.degenerate.all()
        assert not got.bca_fallback.any()


def test_bca_agrees_with_scipy_up_to_monte_carlo_error() -> None:
    x = np.random.default_rng(11).lognormal(size=20) * 100
    ours = bootstrap_mean_intervals(x, np.random.default_rng(1), n_resamples=20_000, method="bca")
    ref = stats.bootstrap(
        (x,), np.mean, n_resamples=20_000, method="BCa", rng=np.random.default_rng(2)
    ).confidence_interval
    width = ref.high - ref.low
    assert abs(ours.low[0] - ref.low) < 0.08 * width
    assert abs(ours.high[0] - ref.high) < 0.08 * width
    # BCa shifts a right-skewed mean's interval to the right of the percentile one.
    pct = bootstrap_mean_intervals(x, np.random.default_rng(1), n_resamples=20_000)
    assert ours.high[0] > pct.high[0]


def test_invalid_input_is_refused() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="at least 2"):
        bootstrap_mean_intervals([1.0], rng)
    with pytest.raises(ValueError, match="finite"):
        bootstrap_mean_intervals([1.0, float("nan")], rng)
    with pytest.raises(ValueError, match="method"):
        bootstrap_mean_intervals([1.0, 2.0], rng, method="basic")  # type: ignore[arg-type]


@given(samples)
def test_percentile_interval_contains_the_estimate(values: list[float]) -> None:
    got = bootstrap_mean_intervals(values, np.random.default_rng(0), n_resamples=500)
    x = np.asarray(values)
    tolerance = 1e-6 * float(np.max(np.abs(x - x.mean()))) + 1e-9 * max(1.0, np.abs(x).max())
    assert got.low[0] - tolerance <= got.estimate[0] <= got.high[0] + tolerance
    assert got.low[0] <= got.high[0]


@given(samples)
def test_sign_flip_mirrors_the_interval(values: list[float]) -> None:
    x = np.asarray(values)
    pos = bootstrap_mean_intervals(x, np.random.default_rng(4), n_resamples=400)
    neg = bootstrap_mean_intervals(-x, np.random.default_rng(4), n_resamples=400)
    scale = 1e-6 * float(np.max(np.abs(x - x.mean()))) + 1e-9 * max(1.0, np.abs(x).max())
    assert neg.low[0] == pytest.approx(-pos.high[0], abs=scale)
    assert neg.high[0] == pytest.approx(-pos.low[0], abs=scale)


@given(
    st.lists(finite, min_size=8, max_size=40),
    st.integers(0, 2**32 - 1),
    st.sampled_from([(0.025, 0.975), (0.05, 0.95), (0.3, 0.7)]),
)
def test_tail_selection_as_integers_matches_float_selection(
    values: list[float], seed: int, qs: tuple[float, float]
) -> None:
    """order_keys: the int32/uint32 views of float32 rows select the same order statistics
    (including rows whose tail does not cross zero: the float fallback)."""
    from pairlab.core.stats import order_keys

    rng = np.random.default_rng(seed)
    rows = (np.asarray(values, dtype=np.float32)[None, :] + rng.normal(0, 1, (3, 1))).astype(
        np.float32
    )
    rows = np.concatenate([rows, np.abs(rows[:1]), -np.abs(rows[:1])])  # one-signed rows too
    want = np.quantile(rows.astype(np.float64), qs, axis=1)
    got = order_keys.percentile_pair(rows.copy(), *qs)
    assert np.allclose(got[0], want[0], rtol=0, atol=0) and np.allclose(
        got[1], want[1], rtol=0, atol=0
    )
    k, n = 1, rows.shape[1]
    srt = np.sort(rows, axis=1).astype(np.float64)
    low, high = order_keys.order_pair(rows.copy(), k, n - 1 - k)
    assert np.array_equal(low, srt[:, k]) and np.array_equal(high, srt[:, n - 1 - k])
