"""The calibration study of the decision interval (docs/statistics.md).

Simulated paired differences of known mean, drawn from named shapes, analysed by
the production code (:func:`pairlab.core.stats.bootstrap_mean_intervals`, 10,000
resamples, the decision interval at 95%). Every sample is an independent draw;
samples are analysed in chunks of columns that share one resample, exactly as the
metrics of one cohort do. Data and resample seeds derive from names (shape,
pairs, chunk), so the figures are reproducible and never tuned to one seed.

Figures per (shape, pairs):
* ``coverage``: the decision interval contains the true mean;
* ``false_win``: its high end is below the true mean (a saving declared where the
  true effect is zero): one-sided, the target is <= 2.5%;
* ``false_regression``: its low end above the true mean;
* ``percentile_coverage`` / ``percentile_false_win``: the same for the reported
  95% percentile interval, for comparison.

``uv run python -m tests.stats_calibration`` prints the full table (markdown).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from pairlab.core.stats import bootstrap_mean_intervals, make_rng

Sampler = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]


def _lognormal(sigma: float, sign: float) -> Sampler:
    mean = float(np.exp(sigma * sigma / 2.0))
    return lambda rng, shape: sign * (rng.lognormal(0.0, sigma, shape) - mean)


SHAPES: dict[str, tuple[str, Sampler]] = {
    "normal": ("normal", lambda rng, shape: rng.normal(0.0, 1.0, shape)),
    "lognormal": (
        "lognormal sigma 0.5 (skewness 1.75), long tail towards costs",
        _lognormal(0.5, 1.0),
    ),
    "lognormal-left": (
        "lognormal sigma 0.5, long tail towards savings",
        _lognormal(0.5, -1.0),
    ),
    "t3": (
        "Student t, 3 degrees of freedom (heavy tails)",
        lambda rng, shape: rng.standard_t(3, shape),
    ),
    "lognormal-1": (
        "lognormal sigma 1.0 (skewness 6.2), long tail towards costs: stress case",
        _lognormal(1.0, 1.0),
    ),
}
PAIRS = (5, 8, 12, 20)
CHUNK = 500


@dataclass(frozen=True)
class Cell:
    shape: str
    pairs: int
    samples: int
    coverage: float
    false_win: float
    false_regression: float
    percentile_coverage: float
    percentile_false_win: float


def run_cell(shape: str, pairs: int, samples: int, resamples: int = 10_000) -> Cell:
    sampler = SHAPES[shape][1]
    hits = np.zeros(5)
    for chunk in range(samples // CHUNK):
        data = sampler(
            make_rng("calibration", shape, str(pairs), str(chunk), "data"), (pairs, CHUNK)
        )
        got = bootstrap_mean_intervals(
            data,
            make_rng("calibration", shape, str(pairs), str(chunk), "resample"),
            n_resamples=resamples,
            decision_confidence=0.95,
        )
        d = got.decision
        assert d is not None
        hits += [
            np.sum((d.low <= 0) & (d.high >= 0)),
            np.sum(d.high < 0),
            np.sum(d.low > 0),
            np.sum((got.low <= 0) & (got.high >= 0)),
            np.sum(got.high < 0),
        ]
    total = (samples // CHUNK) * CHUNK
    rates = hits / total
    return Cell(shape, pairs, total, *(float(r) for r in rates))


def run_study(
    shapes: tuple[str, ...] = tuple(SHAPES), pairs: tuple[int, ...] = PAIRS, samples: int = 10_000
) -> list[Cell]:
    jobs = [(s, n) for s in shapes for n in pairs]
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda job: run_cell(job[0], job[1], samples), jobs))


def markdown(cells: list[Cell]) -> str:
    lines = [
        "| shape | pairs | decision coverage | false-win | false-regression | percentile coverage | percentile false-win |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for c in cells:
        lines.append(
            f"| {c.shape} | {c.pairs} | {c.coverage:.1%} | {c.false_win:.2%} | "
            f"{c.false_regression:.2%} | {c.percentile_coverage:.1%} | {c.percentile_false_win:.2%} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    print(markdown(run_study(samples=n)))
