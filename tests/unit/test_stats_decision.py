"""The decision interval (Student's t and bootstrap-t hull) and its p-values; multiplicity."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from pairlab.core.stats.bootstrap import bootstrap_mean_intervals, draw_resample_indices
from pairlab.core.stats.multiplicity import adjust_pvalues


def decide(data: np.ndarray, seed: int, confidence: float = 0.95, resamples: int = 4000):  # type: ignore[no-untyped-def]
    got = bootstrap_mean_intervals(
        data,
        np.random.default_rng(seed),
        n_resamples=resamples,
        precision="float64",
        decision_confidence=confidence,
    )
    assert got.decision is not None
    return got


def reference_bootstrap_t(
    x: np.ndarray, seed: int, resamples: int, confidence: float
) -> tuple[float, float]:
    """The textbook studentized bootstrap: gather resamples, t* per resample, sort, and
    take the k-th smallest and largest, k = B (1 - confidence) / 2."""
    n = len(x)
    idx = draw_resample_indices(np.random.default_rng(seed), n, resamples)
    res = x[idx]
    t = np.sort((res.mean(axis=1) - x.mean()) / (res.std(axis=1, ddof=1) / np.sqrt(n)))
    k = round(resamples * (1 - confidence) / 2)
    lo_q, hi_q = t[k - 1], t[resamples - k]
    se = x.std(ddof=1) / np.sqrt(n)
    return x.mean() - hi_q * se, x.mean() - lo_q * se


def test_the_decision_interval_is_the_hull_of_student_t_and_the_bootstrap_t() -> None:
    data = np.random.default_rng(4).lognormal(0, 0.6, size=(9, 3)) - 1.2
    got = decide(data[:, :1], seed=11)  # one column: the gather path uses the same draws
    x = data[:, 0]
    t_low, t_high = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    b_low, b_high = reference_bootstrap_t(x, 11, 4000, 0.95)
    d = got.decision
    assert d is not None
    assert d.low[0] == pytest.approx(min(t_low, b_low), rel=1e-9)
    assert d.high[0] == pytest.approx(max(t_high, b_high), rel=1e-9)
    # The skewed sample's bootstrap-t extends the high end beyond Student's.
    assert b_high > t_high


def test_many_columns_share_the_resample_and_match_one_column_at_a_time() -> None:
    data = np.random.default_rng(5).normal(-1, 2, size=(12, 4))
    together = decide(data, seed=3).decision
    assert together is not None
    alone = decide(data[:, 2:3], seed=3).decision
    assert alone is not None
    assert together.high[2] == pytest.approx(alone.high[0], rel=1e-9)
    assert together.p_saving[2] == pytest.approx(alone.p_saving[0], rel=1e-9)


@given(
    st.lists(st.floats(-1e4, 1e4, allow_nan=False), min_size=4, max_size=20).filter(
        lambda v: len(set(v)) > 2
    ),
    st.integers(0, 2**32 - 1),
)
def test_p_values_invert_the_interval(values: list[float], seed: int) -> None:
    """high < 0 exactly when p_saving < alpha / 2, at every confidence (same resample)."""
    data = np.asarray(values)[:, None]
    d = decide(data, seed, resamples=500).decision
    assert d is not None
    p = float(d.p_saving[0])
    if not 1e-6 < p < 0.45:
        return
    for factor, below in ((1.02, True), (0.98, False)):
        at = decide(data, seed, confidence=1 - 2 * p * factor, resamples=500).decision
        assert at is not None
        assert (at.high[0] < 0) == below, (p, factor, at.high[0])


def test_student_t_is_the_floor_of_the_p_value() -> None:
    data = np.random.default_rng(8).normal(-0.4, 1, size=(10, 5))
    d = decide(data, seed=2).decision
    assert d is not None
    one_sided = stats.ttest_1samp(data, 0.0, alternative="less").pvalue
    assert np.all(d.p_saving >= one_sided - 1e-12)
    assert np.all(d.p_two_sided >= stats.ttest_1samp(data, 0.0).pvalue - 1e-12)


def test_all_equal_differences_decide_by_their_sign() -> None:
    data = np.array([[-3.0, 0.0, 2.0]] * 6)
    d = decide(data, seed=1).decision
    assert d is not None
    assert list(d.low) == [-3.0, 0.0, 2.0] and list(d.high) == [-3.0, 0.0, 2.0]
    assert list(d.p_saving) == [0.0, 1.0, 1.0] and list(d.p_increase) == [1.0, 1.0, 0.0]


def test_too_few_distinct_values_leave_an_end_unbounded() -> None:
    # 7 of 8 pairs equal: a third of the resamples have no spread (t* infinite).
    data = np.array([[0.0]] * 7 + [[-1.0]])
    d = decide(data, seed=1).decision
    assert d is not None
    assert d.low[0] == -np.inf and np.isfinite(d.high[0])
    assert d.p_saving[0] > 0.025  # one saving pair of eight is no evidence


def brute_holm(p: list[float]) -> list[float]:
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def brute_bh(p: list[float]) -> list[float]:
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 1.0
    for rank in range(m - 1, -1, -1):
        i = order[rank]
        running = min(running, min(1.0, m / (rank + 1) * p[i]))
        out[i] = running
    return out


@given(st.lists(st.one_of(st.floats(0, 1), st.just(float("nan"))), min_size=1, max_size=15))
def test_holm_and_bh_match_the_textbook_procedures(p: list[float]) -> None:
    arr = np.asarray(p)
    kept = [v for v in p if not np.isnan(v)]
    for method, brute in (("holm", brute_holm), ("bh", brute_bh)):
        got = adjust_pvalues(np.stack([arr, arr]), method)  # type: ignore[arg-type]
        assert np.array_equal(np.isnan(got[0]), np.isnan(arr))
        assert got[0][~np.isnan(arr)] == pytest.approx(brute(kept), abs=1e-12)
        assert np.array_equal(got[0], got[1], equal_nan=True)


def test_unknown_correction_is_refused() -> None:
    with pytest.raises(ValueError, match="holm or bh"):
        adjust_pvalues([0.1], "bonferroni")  # type: ignore[arg-type]
