"""Calibration of the whole cohort pipeline on simulated cohorts with a known effect.

Paired differences are normal with a known mean. The percentile bootstrap of
a mean uses the plug-in spread (divides by n, not n - 1) and normal-like tails
instead of Student's t, so at n pairs its 95% interval covers about
P(|T_{n-1}| < 1.96 * sqrt((n-1)/n)): 0.89 at n = 8 and 0.93 at n = 20. With
1,000 cohorts the standard error of an empirical coverage is about 0.01, so
the asserted bands sit about three standard errors below those values. A false
win (high end below zero when the true effect is zero) is one tail of the
non-coverage: about 0.055 at n = 8; asserted <= 0.08. Seeds are fixed, so the
figures are the same on every run.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pairlab.core.cohorts import analyse_cohorts

TRUE_SAVING = -50.0
SD = 100.0
COHORTS = 1000


def simulated_frame(pairs: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = COHORTS * pairs
    cohort = np.repeat(np.arange(COHORTS), pairs)
    base_total = rng.normal(5000.0, 800.0, n)
    base_latency = rng.normal(30_000.0, 5_000.0, n)
    rows = []
    for arm, total, latency in (
        ("baseline", base_total, base_latency),
        (
            "optimizer",
            base_total + rng.normal(TRUE_SAVING, SD, n),
            base_latency + rng.normal(0.0, SD, n),
        ),
    ):
        rows.append(
            pl.DataFrame(
                {
                    "pairId": [
                        f"c{c}:{i}"
                        for c, i in zip(cohort, np.tile(np.arange(pairs), COHORTS), strict=True)
                    ],
                    "arm": arm,
                    "client": "sim",
                    "taskId": [f"task-{c}" for c in cohort],
                    "correct": True,
                    "totalTokens": total,
                    "latencyMs": latency,  # true effect zero
                }
            )
        )
    return pl.concat(rows)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("pairs", "coverage_floor", "power_floor"), [(8, 0.86, 0.25), (20, 0.90, 0.5)]
)
def test_interval_coverage_and_false_wins(
    pairs: int, coverage_floor: float, power_floor: float
) -> None:
    analysis = analyse_cohorts(
        simulated_frame(pairs, seed=pairs), run_id="calibration", min_pairs=5, n_resamples=10_000
    )
    metrics = list(analysis.to_json()["cohorts"])
    totals = [next(e for e in c["effects"] if e["metric"] == "totalTokens") for c in metrics]
    latencies = [next(e for e in c["effects"] if e["metric"] == "latencyMs") for c in metrics]
    coverage = np.mean([e["ciLow"] <= TRUE_SAVING <= e["ciHigh"] for e in totals])
    null_coverage = np.mean([e["ciLow"] <= 0.0 <= e["ciHigh"] for e in latencies])
    false_wins = np.mean([e["win"] for e in latencies])
    power = np.mean([e["win"] for e in totals])
    print(
        f"\n{pairs} pairs x {COHORTS} cohorts: coverage {coverage:.3f} (effect {TRUE_SAVING}), "
        f"{null_coverage:.3f} (no effect); false-win rate {false_wins:.3f}; win rate {power:.3f}"
    )
    assert coverage_floor <= coverage <= 0.97
    assert coverage_floor <= null_coverage <= 0.97
    assert false_wins <= 0.08
    # Power for a saving of half a standard deviation: about 0.35 at 8 pairs, 0.63 at 20.
    assert power > power_floor
