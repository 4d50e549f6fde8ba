"""The calibration study of the decision interval (slow; runs in CI). Figures: docs/statistics.md.

For each shape of paired differences (normal, lognormal with its long tail towards
costs and towards savings, Student t with 3 df, and a strongly skewed stress case)
and 5, 8, 12 and 20 pairs, 10,000 simulated samples of known mean are analysed by
the production bootstrap (10,000 resamples; :mod:`tests.stats_calibration`).

Targets (issue 15): coverage of the decision interval 93-97% at >= 8 pairs for
every shape; false-win rate (a saving declared where the true effect is zero,
one-sided) <= 2.5% at >= 5 pairs. Every figure is compared with its target up to
two Monte-Carlo standard errors (the study measures a rate on 10,000 samples; a
0.1-point difference is not evidence either way). Where the study *misses* a
target the test pins the documented figure instead, so that a regression shows
and an improvement forces the docs to be updated:

* lognormal sigma 0.5, long tail towards costs: false-win 3.8-5.1% for one test
  at alpha 0.05 (met, 1.3-2.4%, per primary test under the default plan's Holm
  across three primary contrasts);
* lognormal sigma 1.0 (stress case): coverage 90-93%, false-win 7-10%.

No interval can bound these for every skewed distribution at a few pairs (the
unseen tail; Bahadur & Savage 1956); docs/statistics.md says which shapes the
guarantee covers.
"""

from __future__ import annotations

import pytest

from tests.stats_calibration import PAIRS, Cell, markdown, run_study

TARGET_COVERAGE = (0.93, 0.97)
TARGET_FALSE_WIN = 0.025


@pytest.fixture(scope="module")
def cells() -> dict[tuple[str, int], Cell]:
    found = run_study(samples=10_000)
    print("\n" + markdown(found))
    return {(c.shape, c.pairs): c for c in found}


def _within(value: float, low: float, high: float, se: float) -> bool:
    return low - 2 * se <= value <= high + 2 * se


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["normal", "t3", "lognormal", "lognormal-left"])
def test_decision_interval_coverage_target_at_8_pairs_and_more(
    cells: dict[tuple[str, int], Cell], shape: str
) -> None:
    for pairs in PAIRS:
        cell = cells[(shape, pairs)]
        if pairs >= 8:
            assert _within(cell.coverage, *TARGET_COVERAGE, cell.se(cell.coverage)), cell
        else:  # 5 pairs: no coverage target; never below 93%
            assert cell.coverage >= 0.93, cell


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["normal", "t3", "lognormal-left"])
def test_false_win_target_at_5_pairs_and_more(
    cells: dict[tuple[str, int], Cell], shape: str
) -> None:
    for pairs in PAIRS:
        cell = cells[(shape, pairs)]
        assert cell.false_win <= TARGET_FALSE_WIN + 2 * cell.se(TARGET_FALSE_WIN), cell
        # The mirror image: an increase declared where there is none.
        if shape != "lognormal-left":
            assert cell.false_regression <= TARGET_FALSE_WIN + 2 * cell.se(TARGET_FALSE_WIN)


@pytest.mark.slow
def test_skewed_towards_costs_misses_the_single_test_target_as_documented(
    cells: dict[tuple[str, int], Cell],
) -> None:
    for pairs in PAIRS:
        cell = cells[("lognormal", pairs)]
        assert 0.03 <= cell.false_win <= 0.055, cell  # documented miss: 3.8-5.1%
        # Per primary test under the default plan (Holm across 3 primary contrasts): met.
        assert cell.false_win_family3 <= TARGET_FALSE_WIN + 2 * cell.se(TARGET_FALSE_WIN), cell
        assert cell.false_regression <= 0.01, cell


@pytest.mark.slow
def test_stress_case_is_reported_not_claimed(cells: dict[tuple[str, int], Cell]) -> None:
    for pairs in PAIRS:
        cell = cells[("lognormal-1", pairs)]
        assert 0.89 <= cell.coverage <= 0.94, cell
        assert 0.06 <= cell.false_win <= 0.10, cell


@pytest.mark.slow
def test_the_reported_percentile_interval_is_why_it_does_not_decide(
    cells: dict[tuple[str, int], Cell],
) -> None:
    # The seed's percentile interval, still reported: too narrow at a few pairs.
    assert cells[("normal", 8)].percentile_coverage < 0.90
    assert cells[("normal", 5)].percentile_false_win > 0.05
    for (_shape, _pairs), cell in cells.items():
        assert cell.coverage > cell.percentile_coverage
