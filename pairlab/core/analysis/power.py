"""Pairs to pre-register: power of the decision rule from a pilot's paired differences.

The seed asks production studies to "first estimate variance and then pre-register a
powered sample size". For each pilot cohort and contrast this module estimates the
paired-difference standard deviation of a metric and finds the smallest number of
pairs at which the *actual decision rule* (:mod:`pairlab.core.stats.studentized`:
the hull of Student's t and the bootstrap-t, at alpha divided over the primary
family, i.e. Holm's first step) declares a saving of the given size with the target
power.

Power is computed by simulation, not by a formula for another test: for a candidate
``n``, ``replicates`` studies of ``n`` pairs are drawn (``model="normal"``: normal
differences with the pilot's standard deviation; ``"empirical"``: the pilot's own
centered differences resampled, keeping their skew), each is decided as a run would
decide it, and the share of wins is the power. The resampling distribution of a
study does not depend on the effect (a shift leaves the centered sample unchanged),
so one bootstrap per ``n`` serves every effect size. The search starts at Student's
t sample size (noncentral t, exact for normal differences under Student's test
alone); the hybrid decision rule never needs fewer pairs.

A study whose analysis has **one cohort** per contrast and metric is decided by the
one-cohort rule (:mod:`pairlab.core.stats.one_cohort`: the decision interval widened to
``mean + q se``, ``q`` Hall's critical value at the worst calibrated shape); its pairs are
searched the same way on the same simulated studies (``one_cohort=True``).

Seeds derive from names (the model, ``n``, the cohort for the empirical model),
never from the pilot's values: the same pilot gives the same answer.

The standard deviation of a pilot of ``m`` pairs is uncertain; :func:`plan_cohort`
reports the pairs needed at the ends of its 80% confidence interval (chi-square), so
a small pilot shows how much the answer could move.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import numpy as np
from scipy import stats  # type: ignore[import-untyped]  # no stubs locked

from pairlab.core.stats.bootstrap import draw_resample_counts
from pairlab.core.stats.one_cohort import worst_shape_critical
from pairlab.core.stats.seeds import make_rng
from pairlab.core.stats.studentized import studentized_sums

Model = Literal["normal", "empirical"]
MIN_PILOT_PAIRS: Final = 5
DEFAULT_REPLICATES: Final = 4_000
DEFAULT_RESAMPLES: Final = 4_000
MAX_PAIRS: Final = 5_000
_CHUNK = 500


@dataclass(frozen=True)
class Effect:
    """A saving to detect: ``value`` in the metric's units, or a percentage of the control mean."""

    value: float
    relative: bool

    @classmethod
    def parse(cls, text: str) -> Effect:
        raw = text.strip()
        relative = raw.endswith("%")
        try:
            value = float(raw[:-1] if relative else raw)
        except ValueError as exc:
            raise ValueError(f"effect {text!r}: a number, or a percentage such as -10%") from exc
        if value == 0 or not math.isfinite(value):
            raise ValueError(f"effect {text!r}: must be a non-zero saving")
        return cls(value=-abs(value), relative=relative)  # a saving: treatment - control < 0

    def absolute(self, control_mean: float) -> float:
        return self.value / 100.0 * abs(control_mean) if self.relative else self.value

    def __str__(self) -> str:
        return f"{self.value:g}%" if self.relative else f"{self.value:g}"


def student_t_pairs(
    d: float, alpha_one_sided: float, power: float, max_pairs: int = MAX_PAIRS
) -> int:
    """Smallest n at which Student's one-sided t test at ``alpha_one_sided`` detects a
    standardized effect ``d`` (< 0) with ``power`` (noncentral t)."""
    lo, hi = 2, 2

    def ok(n: int) -> bool:
        crit = stats.t.ppf(alpha_one_sided, n - 1)
        return bool(stats.nct.cdf(crit, n - 1, d * math.sqrt(n)) >= power)

    while not ok(hi):
        lo, hi = hi, hi * 2
        if hi > max_pairs:
            return max_pairs + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


@dataclass
class _Replicates:
    """``replicates`` simulated studies of ``n`` pairs with no effect: their means, standard
    errors and the bootstrap-t order statistic that bounds the decision interval's high end."""

    mean: np.ndarray
    se: np.ndarray
    q_low: np.ndarray  # k-th smallest t*

    def power(self, effect: float, t_crit: float, worst: float | None = None) -> float:
        mean = self.mean + effect
        high = np.maximum(mean + t_crit * self.se, mean - self.q_low * self.se)
        if worst is not None:  # the one-cohort rule
            high = np.maximum(high, mean + worst * self.se)
        return float(np.mean(high < 0))


@dataclass
class PowerSimulator:
    """Simulated power of the decision rule at ``alpha_one_sided`` (per test)."""

    alpha_one_sided: float
    model: Model = "normal"
    replicates: int = DEFAULT_REPLICATES
    resamples: int = DEFAULT_RESAMPLES
    _cache: dict[tuple[str, int], _Replicates] = field(default_factory=dict)

    def _studies(self, n: int, noise: np.ndarray | None, name: str) -> _Replicates:
        found = self._cache.get((name, n))
        if found is not None:
            return found
        k = math.floor(self.resamples * self.alpha_one_sided + 1e-9) - 1
        if k < 0:
            raise ValueError(
                f"{self.resamples} resamples cannot resolve alpha {self.alpha_one_sided:g} per test"
            )
        means, ses, qs = [], [], []
        for chunk in range(math.ceil(self.replicates / _CHUNK)):
            draw = make_rng("power", self.model, name, str(n), str(chunk), "data")
            if noise is None:
                data = draw.normal(0.0, 1.0, (n, _CHUNK))
            else:
                data = noise[draw.integers(0, noise.size, (n, _CHUNK))]
            mean = data.mean(axis=0)
            se = data.std(axis=0, ddof=1) / math.sqrt(n)
            counts = draw_resample_counts(
                make_rng("power", self.model, name, str(n), str(chunk), "resample"),
                n,
                self.resamples,
            )
            sums = studentized_sums((data - mean).astype(np.float32), counts, np.zeros(_CHUNK))
            tstar = sums.tstar
            tstar.partition(k, axis=1)
            means.append(mean)
            ses.append(se)
            qs.append(tstar[:, k].astype(np.float64) * math.sqrt(n - 1.0))
        found = _Replicates(np.concatenate(means), np.concatenate(ses), np.concatenate(qs))
        self._cache[(name, n)] = found
        return found

    def power(
        self,
        n: int,
        effect: float,
        sd: float,
        noise: np.ndarray | None = None,
        name: str = "normal",
        one_cohort: bool = False,
    ) -> float:
        """Power at ``n`` pairs for ``effect`` (metric units) when the differences have
        standard deviation ``sd`` (normal model) or are ``noise`` + effect (empirical);
        ``one_cohort``: under the one-cohort rule."""
        t_crit = float(stats.t.ppf(1.0 - self.alpha_one_sided, n - 1))
        worst = float(worst_shape_critical(n, self.alpha_one_sided)) if one_cohort else None
        if noise is None:
            return self._studies(n, None, "normal").power(effect / sd, t_crit, worst)
        return self._studies(n, noise, name).power(effect, t_crit, worst)

    def required_pairs(
        self,
        effect: float,
        sd: float,
        power: float,
        noise: np.ndarray | None = None,
        name: str = "normal",
        max_pairs: int = MAX_PAIRS,
        one_cohort: bool = False,
    ) -> tuple[int, float]:
        """Smallest n (>= 3) whose simulated power reaches ``power``, and that power
        (``max_pairs + 1`` and NaN when even ``max_pairs`` does not)."""
        start = max(3, student_t_pairs(effect / sd, self.alpha_one_sided, power, max_pairs))
        if start > max_pairs:
            return max_pairs + 1, float("nan")

        def reaches(n: int) -> float | None:
            got = self.power(n, effect, sd, noise, name, one_cohort)
            return got if got >= power else None

        # Bracket: the last n that falls short and the first that reaches the power.
        low, high, found = start - 1, start, reaches(start)
        if found is not None:
            while high > 3:  # the hybrid may match Student's: look just below
                before = reaches(high - 1)
                if before is None:
                    break
                high, found = high - 1, before
            return high, found
        while found is None:
            low, high = high, min(max_pairs + 1, high + max(1, high // 8))
            if high > max_pairs:
                return max_pairs + 1, float("nan")
            found = reaches(high)
        while high - low > 1:
            mid = (low + high) // 2
            got = reaches(mid)
            if got is None:
                low = mid
            else:
                high, found = mid, got
        return high, found


@dataclass(frozen=True)
class CohortPlan:
    """The answer for one cohort and contrast."""

    key: dict[str, str]
    contrast: str
    metric: str
    status: str  # ok | too-few-pairs | no-variance | no-control-mean | beyond-max
    pilot_pairs: int
    excluded_null: int
    mean: float | None = None
    sd: float | None = None
    control_mean: float | None = None
    effect: float | None = None
    standardized: float | None = None
    required_pairs: int | None = None
    power_at_required: float | None = None
    student_t_pairs: int | None = None
    pairs_if_sd_low: int | None = None  # at the low end of the sd's 80% interval
    pairs_if_sd_high: int | None = None
    # a study of one cohort per contrast and metric (the one-cohort rule)
    required_pairs_one_cohort: int | None = None
    power_at_one_cohort: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "contrast": self.contrast,
            "metric": self.metric,
            "status": self.status,
            "pilotPairs": self.pilot_pairs,
            "excludedNull": self.excluded_null,
            "mean": self.mean,
            "sd": self.sd,
            "controlMean": self.control_mean,
            "effect": self.effect,
            "standardizedEffect": self.standardized,
            "requiredPairs": self.required_pairs,
            "powerAtRequired": self.power_at_required,
            "studentTPairs": self.student_t_pairs,
            "requiredPairsSdInterval80": [self.pairs_if_sd_low, self.pairs_if_sd_high],
            "requiredPairsOneCohort": self.required_pairs_one_cohort,
            "powerAtRequiredOneCohort": self.power_at_one_cohort,
        }


def plan_cohort(
    simulator: PowerSimulator,
    *,
    key: dict[str, str],
    contrast: str,
    metric: str,
    diffs: np.ndarray,
    control: np.ndarray,
    excluded_null: int,
    effect: Effect,
    power: float,
    min_pilot_pairs: int = MIN_PILOT_PAIRS,
    max_pairs: int = MAX_PAIRS,
) -> CohortPlan:
    """Pairs this cohort needs to detect ``effect`` with ``power`` under the decision rule."""
    m = int(diffs.size)
    base = {
        "key": key,
        "contrast": contrast,
        "metric": metric,
        "pilot_pairs": m,
        "excluded_null": excluded_null,
    }
    if m < max(3, min_pilot_pairs):
        return CohortPlan(status="too-few-pairs", **base)  # type: ignore[arg-type]
    mean, sd = float(diffs.mean()), float(diffs.std(ddof=1))
    control_mean = float(control.mean()) if control.size else None
    described = {**base, "mean": mean, "sd": sd, "control_mean": control_mean}
    if not sd > 0:
        return CohortPlan(status="no-variance", **described)  # type: ignore[arg-type]
    if effect.relative and not control_mean:
        return CohortPlan(status="no-control-mean", **described)  # type: ignore[arg-type]
    absolute = effect.absolute(control_mean or 0.0)
    d = absolute / sd
    noise = None
    name = "normal"
    if simulator.model == "empirical":
        noise = (diffs - mean) / sd
        name = "|".join([*key.values(), contrast, metric])
    n, got = simulator.required_pairs(d * 1.0, 1.0, power, noise, name, max_pairs)
    student = student_t_pairs(d, simulator.alpha_one_sided, power, max_pairs)
    # The sd's 80% interval from the chi-square distribution of the pilot variance.
    df = m - 1
    sd_low = sd * math.sqrt(df / stats.chi2.ppf(0.9, df))
    sd_high = sd * math.sqrt(df / stats.chi2.ppf(0.1, df))
    low_n = simulator.required_pairs(absolute / sd_low, 1.0, power, noise, name, max_pairs)[0]
    high_n = simulator.required_pairs(absolute / sd_high, 1.0, power, noise, name, max_pairs)[0]
    alone, got_alone = simulator.required_pairs(
        d * 1.0, 1.0, power, noise, name, max_pairs, one_cohort=True
    )
    status = "ok" if n <= max_pairs else "beyond-max"
    return CohortPlan(
        status=status,
        effect=absolute,
        standardized=d,
        required_pairs=n if n <= max_pairs else None,
        power_at_required=got if n <= max_pairs else None,
        student_t_pairs=student if student <= max_pairs else None,
        pairs_if_sd_low=low_n if low_n <= max_pairs else None,
        pairs_if_sd_high=high_n if high_n <= max_pairs else None,
        required_pairs_one_cohort=alone if alone <= max_pairs else None,
        power_at_one_cohort=got_alone if alone <= max_pairs else None,
        **described,  # type: ignore[arg-type]
    )
