"""How the achieved power of a study sized by ``pairlab power`` depends on the pilot's size.

Truth: normal paired differences, standardized saving ``d``; a pilot of ``m`` pairs
estimates the sd (its estimate is sd * sqrt(chi2_{m-1} / (m-1))), the decision rule's
required pairs are found for that estimate, and the power actually achieved at that
size under the truth is computed with the same simulator (which the evidence-validity
test checks against the real aggregation path). Pilot draws are seeded by names.

``uv run python -m tests.power_sensitivity`` prints the table in docs/statistics.md.
"""

from __future__ import annotations

import numpy as np

from pairlab.core.analysis.power import PowerSimulator
from pairlab.core.stats.seeds import make_rng

PILOTS = (10, 20, 40, 120, 300)


def achieved_powers(d: float, m: int, draws: int = 200, target: float = 0.8) -> np.ndarray:
    sim = PowerSimulator(alpha_one_sided=0.025 / 3, replicates=4000)
    sd_hats = np.sqrt(make_rng("pilot-sd", str(m), str(d)).chisquare(m - 1, draws) / (m - 1))
    out = []
    for sd_hat in sd_hats:
        n, _ = sim.required_pairs(-d, float(sd_hat), target, max_pairs=3000)
        out.append(sim.power(n, -d, 1.0))
    return np.asarray(out)


if __name__ == "__main__":
    print(
        "| standardized saving | pilot pairs | achieved power: 10% | median | 90% | share within 75-85% |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for d in (0.5, 0.8):
        for m in PILOTS:
            got = achieved_powers(d, m)
            within = np.mean((got >= 0.75) & (got <= 0.85))
            lo, mid, hi = np.quantile(got, [0.1, 0.5, 0.9])
            print(f"| {d} | {m} | {lo:.2f} | {mid:.2f} | {hi:.2f} | {within:.0%} |")
