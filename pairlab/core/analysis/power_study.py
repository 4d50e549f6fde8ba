"""The rules of ``pairlab power``: from a pilot's records and its plan, the pairs to
pre-register (:mod:`pairlab.core.analysis.power` simulates one cohort).

* alpha per test: the plan's alpha (or the one asked), two-sided, divided over the
  primary family, one-sided: ``alpha / 2 / family`` (Holm's first step, the
  strictest the decision rule applies); the family is the plan's primary contrasts
  unless told;
* the metric of a contrast: the one asked, else the contrast's primary metric, else
  the plan's; a metric that is not the contrast's primary test is noted (it is
  powered at the primary family's alpha);
* the shape: per contrast and metric, the pilot cohorts' sample skewness judged as
  an analysis judges it (:mod:`pairlab.core.stats.skew_gate`): the pairs at which the
  decision interval is calibrated for that shape (``pairsNeeded``; null beyond the
  calibration), the number ``pairlab aggregate`` gives when the same cohorts are too
  skewed for their pairs;
* the value to pre-register: the largest required pairs over the cohorts that
  could be estimated, raised to the shape's pairs needed (None when no cohort
  could be estimated: the pilot is too small);
* a study of **one cohort** per contrast and metric (one task, client and model): its
  shape cannot be judged, so it is decided by the one-cohort rule
  (:mod:`pairlab.core.stats.one_cohort`); the pairs it needs are given beside
  (``preRegisterOneCohort``: the largest over the cohorts), never folded into the value
  above.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import numpy as np

from pairlab.core.analysis.metrics import METRICS
from pairlab.core.analysis.pairing import paired_samples
from pairlab.core.analysis.power import CohortPlan, Effect, PowerSimulator, plan_cohort
from pairlab.core.analysis.study_plan import ResolvedPlan
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.stats.skew_gate import MAX_CALIBRATED_PAIRS, pairs_needed, sample_skewness

MODELS: Final = ("normal", "empirical")
DECISION_RULE: Final = "studentized-hybrid (Student t and bootstrap-t hull), Holm's first step"


@dataclass(frozen=True)
class PowerRequest:
    """What ``pairlab power`` was asked (None: the plan's)."""

    effect: Effect
    power: float
    metric: str | None = None
    contrasts: Sequence[str] | None = None
    alpha: float | None = None
    family_size: int | None = None
    model: str = "normal"
    min_pilot_pairs: int = 5
    max_pairs: int = 2000
    replicates: int = 4000

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise _bad(f"--model {self.model!r}: normal or empirical")


@dataclass
class PowerStudy:
    """The answer: per cohort the pairs needed, and the value to pre-register."""

    source: str
    plan: ResolvedPlan
    request: PowerRequest
    contrasts: list[str]
    alpha: float
    family: int
    rows: list[CohortPlan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    shape: list[ShapeNeed] = field(default_factory=list)

    @property
    def alpha_per_test(self) -> float:
        return self.alpha / 2.0 / self.family  # one-sided, Holm's first step

    @property
    def pre_register(self) -> int | None:
        ok = [r for r in self.rows if r.status == "ok" and r.required_pairs is not None]
        if not ok:
            return None
        shape = [s.pairs_needed or 0 for s in self.shape]
        return max([*((r.required_pairs or 0) for r in ok), *shape])

    @property
    def pre_register_one_cohort(self) -> int | None:
        """Pairs a study of one cohort per contrast and metric needs (None: none estimated,
        or beyond the search)."""
        ok = [r for r in self.rows if r.status == "ok"]
        if not ok or any(r.required_pairs_one_cohort is None for r in ok):
            return None
        return max(r.required_pairs_one_cohort or 0 for r in ok)

    def to_json(self) -> dict[str, Any]:
        pre, study = self.pre_register, self.plan.plan
        return {
            "source": self.source,
            "plan": {"id": study.id, "source": self.plan.source, "sha256": self.plan.sha256},
            "effect": str(self.request.effect),
            "power": self.request.power,
            "alpha": self.alpha,
            "familySize": self.family,
            "alphaPerTest": self.alpha_per_test,
            "model": self.request.model,
            "replicates": self.request.replicates,
            "decisionRule": DECISION_RULE,
            "cohorts": [r.to_json() for r in self.rows],
            "shape": [s.to_json() for s in self.shape],
            "preRegister": None
            if pre is None
            else {
                "minPairs": pre,
                "env": f"TOKEN_OPTIMIZER_EVAL_MIN_PAIRS={pre}",
                "plan": f"min_pairs: {pre}",
                "repetitions": pre,
            },
            "preRegisterOneCohort": self.pre_register_one_cohort,
            "notes": self.notes,
        }


@dataclass(frozen=True)
class ShapeNeed:
    """The pilot's shape for one contrast's metric: its cohorts' mean sample skewness and
    the pairs the decision interval needs for it (None: beyond the calibration)."""

    contrast: str
    metric: str
    cohorts: int
    mean_skewness: float
    pairs_needed: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "contrast": self.contrast,
            "metric": self.metric,
            "cohorts": self.cohorts,
            "meanSkewness": self.mean_skewness,
            "pairsNeeded": self.pairs_needed,
            "calibratedPairs": MAX_CALIBRATED_PAIRS,
        }


def shape_need(contrast: str, metric: str, samples: Sequence[Any]) -> ShapeNeed | None:
    """:class:`ShapeNeed` from the pilot cohorts' differences (``samples``: arrays of at
    least 3 pairs each; None when there are none), towards the side their skew points."""
    g, n = [], []
    for diffs in samples:
        found = float(sample_skewness(np.asarray(diffs, dtype=float)[:, None])[0])
        if found == found:  # not NaN: 3 pairs or more, with spread
            g.append(found)
            n.append(len(diffs))
    if not g:
        return None
    mean = float(np.mean(g))
    sign = 1.0 if mean >= 0 else -1.0
    needed = pairs_needed(sign * np.asarray(g), np.asarray(n, dtype=np.int64))
    return ShapeNeed(contrast, metric, len(g), mean, needed if needed > 0 else None)


def _bad(message: str) -> InvalidInputError:
    return InvalidInputError(message, reason=ReasonCode.INVALID_INPUT)


def _metrics(study: PowerStudy) -> dict[str, str]:
    """The metric of each contrast (see the module docstring); notes the non-primary ones."""
    plan = study.plan.plan
    asked = study.request.metric
    metrics = {
        c: asked or plan.primary_metric_of(c) or plan.primary_metric for c in study.contrasts
    }
    for c, m in metrics.items():
        if m not in METRICS:
            raise _bad(f"unknown metric {m!r}")
        if plan.primary_metric_of(c) != m:
            study.notes.append(
                f"{c} {m} is not a primary test of plan {plan.id!r}: powered at alpha/{study.family} "
                "(use --family-size for the secondary family's size)"
            )
    return metrics


def power_study(
    records: Sequence[EpisodeRecord],
    resolved: ResolvedPlan,
    request: PowerRequest,
    *,
    source: str,
    progress: Callable[[str], None] | None = None,
) -> PowerStudy:
    """The pairs each pilot cohort needs under ``resolved``'s decision rule (``progress``:
    told each cohort before its simulation, which takes seconds at large n)."""
    plan = resolved.plan
    level = plan.alpha if request.alpha is None else request.alpha
    if not 0 < level <= 0.2:
        raise _bad(f"--alpha {level}: must be in (0, 0.2]")
    study = PowerStudy(
        source=source,
        plan=resolved,
        request=request,
        contrasts=list(request.contrasts or plan.primary_contrasts),
        alpha=level,
        family=request.family_size or len(plan.primary_contrasts),
    )
    metrics = _metrics(study)
    model: Literal["normal", "empirical"] = "normal" if request.model == "normal" else "empirical"
    simulator = PowerSimulator(
        alpha_one_sided=study.alpha_per_test, model=model, replicates=request.replicates
    )
    pilot: dict[tuple[str, str], list[Any]] = {}
    for m in sorted(set(metrics.values())):
        for sample in paired_samples(records, m):
            label = sample.contrast.label
            if metrics.get(label) != m:
                continue
            if sample.diffs.size >= max(3, request.min_pilot_pairs):
                pilot.setdefault((label, m), []).append(sample.diffs)
            if progress is not None:
                progress(f"simulating {sample.key['taskId']} {label} {m} ...")
            study.rows.append(
                plan_cohort(
                    simulator,
                    key=sample.key,
                    contrast=label,
                    metric=m,
                    diffs=sample.diffs,
                    control=sample.control,
                    excluded_null=sample.excluded_null,
                    effect=request.effect,
                    power=request.power,
                    min_pilot_pairs=request.min_pilot_pairs,
                    max_pairs=request.max_pairs,
                )
            )
    for (label, m), found in pilot.items():
        need = shape_need(label, m, found)
        if need is not None:
            study.shape.append(need)
            if need.pairs_needed is None:
                study.notes.append(
                    f"{label} {m} is skewed beyond the decision interval's calibration "
                    f"(mean skewness {need.mean_skewness:.2f} over {need.cohorts} cohorts): "
                    f"more than {MAX_CALIBRATED_PAIRS} pairs per cohort; an analysis of it "
                    "says insufficient (skewed)"
                )
    if not study.rows:
        raise InvalidInputError(
            f"{source}: no cohort has the contrasts {', '.join(study.contrasts)}",
            reason=ReasonCode.INSUFFICIENT_PILOT,
        )
    return study
