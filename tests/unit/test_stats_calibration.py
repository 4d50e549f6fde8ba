"""The calibration study of the decision rule (slow; runs in CI). Figures: docs/statistics.md.

For each shape of paired differences (normal; Student t with 3 df; lognormal sigma 0.5
and sigma 1, each with its long tail towards costs and towards savings) and 8, 10, 15
and 25 pairs, 6,000 simulated samples of known mean are analysed by the production
bootstrap (4,000 resamples) and the skewness gate, the samples grouped into analyses of
K cohorts of one shape (:mod:`tests.stats_calibration`).

Targets (issue 28), at >= 8 pairs, for every shape: the one-sided false-win rate <=
2.5% and coverage 93-97%, or the decision says ``insufficient`` (skewed) instead. With
the gate, over analyses of 20 cohorts (a study of a few tasks x clients), per shape and
pairs:

* false wins (a decided saving where there is none, over all samples: an insufficient
  effect declares nothing) <= 2.5%;
* decided with a miscovering interval (over all samples) <= 7%, i.e. the interval
  covers or the rule says insufficient at least 93% of the time;
* where most effects are decided, coverage among them 93-97% and false wins <= 2.5%.

Each figure is compared with its target up to two Monte-Carlo standard errors. One
cohort alone cannot show its shape (the gate needs two): what the interval alone costs
on the skewed shapes is pinned, and the one-cohort rule
(:mod:`pairlab.core.stats.one_cohort`) that decides such a cohort is measured on every
shape and pair count (6,000 samples each): false wins and false regressions <= 2.5%,
non-rejection at the true mean >= 93% (it is above 97% everywhere: conservative, the
documented price), and it still decides a clear saving at 25 pairs.
"""

from __future__ import annotations

import pytest

from tests.stats_calibration import (
    ONE_COHORT,
    PAIRS,
    SHAPES,
    Cell,
    markdown,
    one_cohort_cell,
    run_study,
)

TARGET_COVERAGE = (0.93, 0.97)
TARGET_FALSE_WIN = 0.025
SAMPLES = 6_000
SYMMETRIC = ("normal", "t3")


@pytest.fixture(scope="module")
def cells() -> dict[tuple[str, int], Cell]:
    found = run_study(samples=SAMPLES)
    print("\n" + markdown(found))
    return {(c.shape, c.pairs): c for c in found}


def _at_most(cell: Cell, value: float, target: float, samples: int | None = None) -> bool:
    return value <= target + 2 * cell.se(target, samples)


@pytest.mark.slow
@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_shape_meets_the_targets_or_is_insufficient_in_an_analysis_of_20_cohorts(
    cells: dict[tuple[str, int], Cell], shape: str
) -> None:
    for pairs in PAIRS:
        cell = cells[(shape, pairs)]
        gated = cell.gated[20]
        assert _at_most(cell, gated.false_win, TARGET_FALSE_WIN), cell
        assert _at_most(cell, gated.miscovered, 1 - TARGET_COVERAGE[0]), cell
        decided = round((1 - gated.insufficient) * cell.samples)
        if decided >= cell.samples / 2:
            assert _at_most(cell, gated.false_win_decided, TARGET_FALSE_WIN, decided), cell
            low, high = TARGET_COVERAGE
            se = cell.se(gated.coverage_decided, decided)
            assert low - 2 * se <= gated.coverage_decided <= high + 2 * se, cell


@pytest.mark.slow
@pytest.mark.parametrize("shape", SYMMETRIC)
def test_symmetric_shapes_are_decided_and_meet_the_targets_alone(
    cells: dict[tuple[str, int], Cell], shape: str
) -> None:
    for pairs in PAIRS:
        cell = cells[(shape, pairs)]
        low, high = TARGET_COVERAGE
        assert low - 2 * cell.se(low) <= cell.coverage <= high + 2 * cell.se(high), cell
        assert _at_most(cell, cell.false_win, TARGET_FALSE_WIN), cell
        assert _at_most(cell, cell.false_regression, TARGET_FALSE_WIN), cell
        # the gate rarely refuses them (a refusal is a lost decision, not an error)
        assert cell.gated[20].insufficient <= 0.05, cell
        assert cell.gated[5].insufficient <= 0.2, cell


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["lognormal", "lognormal-1"])
def test_skewed_towards_costs_misses_without_the_gate_so_the_gate_is_needed(
    cells: dict[tuple[str, int], Cell], shape: str
) -> None:
    for pairs in PAIRS:
        cell = cells[(shape, pairs)]
        # the interval alone declares false savings above the target (the finding);
        # the gate cannot judge a single cohort (K = 1 below is the interval alone): the
        # one-cohort rule decides it (test_a_lone_cohort_meets_the_false_win_target...)
        assert cell.false_win > TARGET_FALSE_WIN + 2 * cell.se(TARGET_FALSE_WIN), cell
        assert cell.gated[1].insufficient == 0.0 and cell.gated[1].false_win == cell.false_win
        # 20 cohorts of it: refused (almost) always
        assert cell.gated[20].insufficient >= 0.85, cell


@pytest.mark.slow
def test_the_stress_shape_misses_coverage_alone(cells: dict[tuple[str, int], Cell]) -> None:
    for shape in ("lognormal-1", "lognormal-1-left"):
        assert all(cells[(shape, pairs)].coverage < 0.935 for pairs in (8, 10)), shape


@pytest.mark.slow
def test_the_reported_percentile_interval_is_why_it_does_not_decide(
    cells: dict[tuple[str, int], Cell],
) -> None:
    # The seed's percentile interval, still reported: too narrow at a few pairs.
    assert cells[("normal", 8)].percentile_coverage < 0.90
    assert cells[("normal", 8)].percentile_false_win > 0.05
    for cell in cells.values():
        assert cell.coverage > cell.percentile_coverage


ONE_COHORT_SAMPLES = 6_000


@pytest.fixture(scope="module")
def lone() -> dict[tuple[str, int], dict[str, list[float]]]:
    found = {
        (shape, pairs): {
            k: [float(x) for x in v]
            for k, v in one_cohort_cell(shape, pairs, ONE_COHORT_SAMPLES, "ci").items()
        }
        for shape in SHAPES
        for pairs in PAIRS
    }
    print("\n" + "\n".join(f"{key}: {got[ONE_COHORT[-1]]}" for key, got in found.items()))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_lone_cohort_meets_the_false_win_target_under_the_one_cohort_rule(
    lone: dict[tuple[str, int], dict[str, list[float]]], shape: str
) -> None:
    def se(rate: float) -> float:
        return float((rate * (1 - rate) / ONE_COHORT_SAMPLES) ** 0.5)

    for pairs in PAIRS:
        coverage, false_win, false_regression, _, power = lone[(shape, pairs)][ONE_COHORT[-1]]
        assert false_win <= TARGET_FALSE_WIN + 2 * se(TARGET_FALSE_WIN), (pairs, false_win)
        assert false_regression <= TARGET_FALSE_WIN + 2 * se(TARGET_FALSE_WIN), pairs
        assert coverage >= TARGET_COVERAGE[0] - 2 * se(TARGET_COVERAGE[0]), (pairs, coverage)
        # the interval alone decides more often (the rule's price), never less
        assert power <= lone[(shape, pairs)]["hull"][4] + 0.005, pairs
    # a clear saving (1 sd) at 25 pairs is still decided most of the time
    assert lone[(shape, 25)][ONE_COHORT[-1]][4] >= 0.7, shape
