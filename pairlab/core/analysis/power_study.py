"""The rules of ``pairlab power``: from a pilot's records and its plan, the pairs to
pre-register (:mod:`pairlab.core.analysis.power` simulates one cohort).

* alpha per test: the plan's alpha (or the one asked), two-sided, divided over the
  primary family, one-sided: ``alpha / 2 / family`` (Holm's first step, the
  strictest the decision rule applies); the family is the plan's primary contrasts
  unless told;
* the metric of a contrast: the one asked, else the contrast's primary metric, else
  the plan's; a metric that is not the contrast's primary test is noted (it is
  powered at the primary family's alpha);
* the value to pre-register: the largest required pairs over the cohorts that
  could be estimated (None when none could: the pilot is too small).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pairlab.core.analysis.metrics import METRICS
from pairlab.core.analysis.pairing import paired_samples
from pairlab.core.analysis.power import CohortPlan, Effect, PowerSimulator, plan_cohort
from pairlab.core.analysis.study_plan import ResolvedPlan
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.episode import EpisodeRecord

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

    @property
    def alpha_per_test(self) -> float:
        return self.alpha / 2.0 / self.family  # one-sided, Holm's first step

    @property
    def pre_register(self) -> int | None:
        ok = [r for r in self.rows if r.status == "ok" and r.required_pairs is not None]
        return max((r.required_pairs or 0) for r in ok) if ok else None

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
            "preRegister": None
            if pre is None
            else {
                "minPairs": pre,
                "env": f"TOKEN_OPTIMIZER_EVAL_MIN_PAIRS={pre}",
                "plan": f"min_pairs: {pre}",
                "repetitions": pre,
            },
            "notes": self.notes,
        }


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
    for m in sorted(set(metrics.values())):
        for sample in paired_samples(records, m):
            label = sample.contrast.label
            if metrics.get(label) != m:
                continue
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
    if not study.rows:
        raise InvalidInputError(
            f"{source}: no cohort has the contrasts {', '.join(study.contrasts)}",
            reason=ReasonCode.INSUFFICIENT_PILOT,
        )
    return study
