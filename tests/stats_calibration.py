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
    false_win_family3: (
        float  # p_saving <= alpha / (2 * 3): Holm's first step over 3 primary contrasts
    )
    percentile_coverage: float
    percentile_false_win: float

    def se(self, rate: float) -> float:
        """Monte-Carlo standard error of a rate measured on this cell's samples."""
        return float(np.sqrt(max(rate * (1 - rate), 1e-12) / self.samples))


def run_cell(shape: str, pairs: int, samples: int, resamples: int = 10_000) -> Cell:
    sampler = SHAPES[shape][1]
    hits = np.zeros(6)
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
            np.sum(d.p_saving <= 0.05 / 6),
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
        "| shape | pairs | decision coverage | false-win | false-regression | false-win, 1 of 3 primary (Holm) | percentile coverage | percentile false-win |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for c in cells:
        lines.append(
            f"| {c.shape} | {c.pairs} | {c.coverage:.1%} | {c.false_win:.2%} | "
            f"{c.false_regression:.2%} | {c.false_win_family3:.2%} | {c.percentile_coverage:.1%} | "
            f"{c.percentile_false_win:.2%} |"
        )
    return "\n".join(lines)


def candidates_cell(
    shape: str, pairs: int, samples: int, resamples: int = 10_000
) -> dict[str, tuple[float, float]]:
    """Coverage and false-win of each candidate decision interval (the calibration study's
    comparison), all from the same resamples: Student's t, the percentile bootstrap,
    Hesterberg's expanded percentile, the bootstrap-t, and the chosen hull of t and
    bootstrap-t."""
    from scipy import special, stats

    from pairlab.core.stats import draw_resample_counts
    from pairlab.core.stats.studentized import column_stats, studentized_sums

    sampler = SHAPES[shape][1]
    n = pairs
    t_crit = stats.t.ppf(0.975, n - 1)
    # Hesterberg (2015): percentile at alpha' with Phi^-1(alpha'/2) = sqrt(n/(n-1)) t_{alpha/2, n-1}
    expanded = float(special.ndtr(-np.sqrt(n / (n - 1)) * t_crit))
    k = resamples * 25 // 1000 - 1
    tally: dict[str, np.ndarray] = {}
    for chunk in range(samples // CHUNK):
        data = sampler(
            make_rng("calibration", shape, str(pairs), str(chunk), "data"), (pairs, CHUNK)
        )
        counts = draw_resample_counts(
            make_rng("calibration", shape, str(pairs), str(chunk), "resample"), n, resamples
        )
        mean = data.mean(axis=0)
        se = data.std(axis=0, ddof=1) / np.sqrt(n)
        centered = (data - mean).astype(np.float32)
        sums = studentized_sums(centered, counts, column_stats(data).t_obs)
        tq = np.sort(sums.tstar, axis=1) * np.sqrt(n - 1.0)
        boot = (mean - tq[:, resamples - 1 - k] * se, mean - tq[:, k] * se)
        s1 = np.sort(sums.s1, axis=1).astype(np.float64)
        pct = np.quantile(s1, [0.025, 0.975], axis=1) / n + mean
        exp = np.quantile(s1, [expanded / 2, 1 - expanded / 2], axis=1) / n + mean
        student = (mean - t_crit * se, mean + t_crit * se)
        hull = (np.minimum(student[0], boot[0]), np.maximum(student[1], boot[1]))
        for name, (lo, hi) in {
            "student-t": student,
            "percentile": (pct[0], pct[1]),
            "expanded percentile": (exp[0], exp[1]),
            "bootstrap-t": boot,
            "hull(t, bootstrap-t)": hull,
        }.items():
            tally.setdefault(name, np.zeros(2))
            tally[name] += [np.sum((lo <= 0) & (hi >= 0)), np.sum(hi < 0)]
    total = (samples // CHUNK) * CHUNK
    return {name: (float(v[0] / total), float(v[1] / total)) for name, v in tally.items()}


def candidates_markdown(samples: int) -> str:
    names = (
        "student-t",
        "percentile",
        "expanded percentile",
        "bootstrap-t",
        "hull(t, bootstrap-t)",
    )
    lines = [
        "| shape | pairs | " + " | ".join(f"{n} cov / false-win" for n in names) + " |",
        "| --- | ---: |" + " ---: |" * len(names),
    ]
    for shape in SHAPES:
        for pairs in PAIRS:
            got = candidates_cell(shape, pairs, samples)
            cells = " | ".join(f"{got[n][0]:.1%} / {got[n][1]:.2%}" for n in names)
            lines.append(f"| {shape} | {pairs} | {cells} |")
    return "\n".join(lines)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    if len(sys.argv) > 2 and sys.argv[2] == "candidates":
        print(candidates_markdown(n))
    else:
        print(markdown(run_study(samples=n)))
