"""Decision labels of every effect of a cohort analysis, from its plan (DESIGN 7).

Input: per [cohort, contrast, metric] the decision test's one-sided p-values
(:mod:`pairlab.core.stats.studentized`), pair counts, the reported percentile
interval, and per [cohort, contrast] whether correctness held; output: a role,
a decision and, where an interval excluded zero but there is no win or
regression, the reason. All vectorised over cohorts.

Roles: ``primary`` (the plan's primary metric of a primary contrast),
``secondary`` (a secondary metric on any other contrast/metric), ``descriptive``
(neither: reported, never tested).

Decisions:

* ``insufficient``: no interval (``not-observed``: no pair has the metric;
  ``too-few-pairs``: fewer non-null pairs than the gate), or an interval the
  calibration does not vouch for (``skewed``: the analysis's cohorts show the
  contrast's metric skewed beyond what the decision interval is calibrated for at
  their pairs - :mod:`pairlab.core.stats.skew_gate`; the intervals are reported, the
  decision waits for the pairs needed, :attr:`EffectLabels.shape`; ``shape-unknown``:
  the effect is its contrast's metric's only tested cohort, so no shape can be judged,
  and the decision test would have decided it but the one-cohort rule does not);
* ``not-tested``: a descriptive effect;
* ``primary-win`` / ``secondary-win``: the family-adjusted two-sided p-value is
  at most alpha, the effect is a saving, correctness did not regress, and the
  effect has the pre-registered minimum pairs;
* ``regression``: the same, for an increase (correctness plays no part);
* ``no-evidence``: everything else tested, with a reason when an interval
  excluded zero: ``correctness-regressed`` / ``correctness-unproven`` (a
  significant saving that cannot be a win), ``adjusted-threshold`` (the
  decision interval excludes zero but the family-adjusted p-value is above
  alpha), ``decision-interval`` (only the reported percentile interval excludes
  zero), ``below-gate`` (the decision interval excludes zero but the effect has
  fewer pairs than the plan pre-registered: an exploratory analysis).

Families (per cohort): the primary tests, and the secondary tests, each
adjusted separately (Holm for primary; the plan's correction for secondary).
Only effects with the pre-registered minimum pairs join a family; a ``skewed``
effect is not tested, so joins none.

**One cohort** (with the gate on, ``skewness`` given): an effect that is the only tested
cohort of its contrast's metric in the analysis cannot have its shape judged (the gate
needs two); it is tested with its one-sided p-values raised to what its Student
statistic gives under the worst calibrated shape
(:func:`pairlab.core.stats.one_cohort.worst_shape_p`), in its family as any other. An
effect that the decision test alone would have made a win or a regression (its family
adjusted the same way) and this does not is ``insufficient`` (``shape-unknown``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from pairlab.core.analysis.metrics import METRICS, Contrast
from pairlab.core.analysis.study_plan import StudyPlan
from pairlab.core.stats.multiplicity import adjust_pvalues
from pairlab.core.stats.one_cohort import worst_shape_p
from pairlab.core.stats.skew_gate import MIN_COHORTS, ShapeVerdict, judge_shape

ROLES: Final = ("primary", "secondary", "descriptive")
DECISIONS: Final = (
    "primary-win",
    "secondary-win",
    "regression",
    "no-evidence",
    "insufficient",
    "not-tested",
)
REASONS: Final = (
    "",
    "not-observed",
    "too-few-pairs",
    "correctness-regressed",
    "correctness-unproven",
    "adjusted-threshold",
    "decision-interval",
    "below-gate",
    "skewed",
    "shape-unknown",
)
WINS: Final = ("primary-win", "secondary-win")


@dataclass(frozen=True)
class DecisionWords:
    """How one decision is spelled wherever it is shown.

    ``table``: ``pairlab aggregate``'s table; ``label``: the UI artifact's label;
    ``word``: the reports' short word (empty: the reason speaks instead);
    ``outcome``: the headline's count it joins (win / regression / noEvidence /
    insufficient); ``tone``: report.html's colour (None: neutral when an
    interval was computed, muted when not); ``headline_reason``: the reason the
    headline counts when the effect gives none; ``computed``: the effect was
    estimated (only then can the UI mark it exploratory).
    """

    table: str
    label: str
    word: str
    outcome: str
    tone: str | None
    headline_reason: str = ""
    computed: bool = True


@dataclass(frozen=True)
class ReasonWords:
    """How one reason is spelled: ``table`` in the aggregate table (None: a reason the
    headline gives, never an effect's), ``short`` in the reports and the UI artifact."""

    table: str | None
    short: str


# The one table of the decision vocabulary: renaming a decision touches this file only.
DECISION_WORDS: Final = {
    "primary-win": DecisionWords("PRIMARY WIN", "primary win", "win", "win", "win"),
    "secondary-win": DecisionWords(
        "secondary win (adjusted)", "secondary win (adjusted)", "win", "win", "win"
    ),
    "regression": DecisionWords(
        "REGRESSION", "regression", "regression", "regression", "regression"
    ),
    "no-evidence": DecisionWords("no evidence", "no evidence", "", "noEvidence", None),
    "insufficient": DecisionWords(
        "insufficient", "insufficient", "", "insufficient", None, computed=False
    ),
    "not-tested": DecisionWords(
        "not tested", "not tested", "not tested", "noEvidence", None, headline_reason="not-tested"
    ),
}
REASON_WORDS: Final = {
    "not-observed": ReasonWords("not observed", "not observed"),
    "too-few-pairs": ReasonWords("too few pairs", "too few pairs"),
    "correctness-regressed": ReasonWords(
        "saving, but correctness regressed", "saving, correctness regressed"
    ),
    "correctness-unproven": ReasonWords(
        "saving, but correctness unproven (nothing graded)", "saving, correctness not graded"
    ),
    "adjusted-threshold": ReasonWords(
        "decision interval excludes 0, above the adjusted threshold",
        "above the adjusted threshold",
    ),
    "decision-interval": ReasonWords(
        "only the 95% percentile interval excludes 0", "only the 95% CI excludes 0"
    ),
    "below-gate": ReasonWords(
        "decision interval excludes 0, below the pre-registered pairs", "below the plan's pairs"
    ),
    "skewed": ReasonWords(
        "skewed beyond the calibration at these pairs: more pairs needed",
        "skewed, more pairs needed",
    ),
    "shape-unknown": ReasonWords(
        "one cohort: its shape unknown, not beyond the worst calibrated shape",
        "one cohort, shape unknown",
    ),
    # the headline's reasons for a cell that is no win (pairlab.core.report.headline)
    "not-tested": ReasonWords(None, "not tested"),
    "cohort-below-gate": ReasonWords(None, "cohort below the gate"),
    "not-graded": ReasonWords(None, "nothing graded"),
    "no-quota-units": ReasonWords(None, "no quota measurement"),
    "below-precision": ReasonWords(None, "below the windows' precision"),
}

IntArray = NDArray[np.int8]


@dataclass(frozen=True)
class EffectLabels:
    """Codes into ROLES/DECISIONS/REASONS per [cohort, contrast, metric], and adjusted p;
    ``shape``: the skewness gate's verdict per [contrast, metric] (None: not judged)."""

    role: IntArray
    decision: IntArray
    reason: IntArray
    p_adjusted: NDArray[np.float64]
    shape: ShapeVerdict | None = None

    @property
    def win(self) -> NDArray[np.bool_]:
        return np.asarray(self.decision <= DECISIONS.index("secondary-win"))


def roles(plan: StudyPlan, contrasts: list[Contrast], metrics: Sequence[str] = METRICS) -> IntArray:
    """[contrast, metric] role codes under ``plan`` (``metrics``: the last axis's names)."""
    out = np.full((len(contrasts), len(metrics)), ROLES.index("descriptive"), dtype=np.int8)
    secondary = set(plan.secondary_metrics)
    for j, contrast in enumerate(contrasts):
        primary = plan.primary_metric_of(contrast.label)
        for i, metric in enumerate(metrics):
            if metric == primary:
                out[j, i] = ROLES.index("primary")
            elif metric in secondary:
                out[j, i] = ROLES.index("secondary")
    return out


def _adjusted(
    plan: StudyPlan,
    p_saving: NDArray[np.float64],
    p_increase: NDArray[np.float64],
    primary: NDArray[np.bool_],
    secondary: NDArray[np.bool_],
    confirmatory: NDArray[np.bool_],
) -> NDArray[np.float64]:
    """Family-adjusted two-sided p-values (Holm for primary, the plan's for secondary)."""
    p_two = np.minimum(1.0, 2.0 * np.minimum(p_saving, p_increase))
    p_adj = np.full(p_two.shape, np.nan)
    if p_two.size:
        p_adj = np.where(primary, _family_adjusted(p_two, confirmatory & primary, "holm"), p_adj)
        p_adj = np.where(
            secondary,
            _family_adjusted(p_two, confirmatory & secondary, plan.secondary_correction),
            p_adj,
        )
    return p_adj


def _family_adjusted(
    p: NDArray[np.float64], member: NDArray[np.bool_], method: str
) -> NDArray[np.float64]:
    k = p.shape[0]
    flat = np.where(member, p, np.nan).reshape(k, -1)
    return adjust_pvalues(flat, method).reshape(p.shape)  # type: ignore[arg-type]


def _at_least_worst_shape(
    alone: NDArray[np.bool_],
    p: NDArray[np.float64],
    t: NDArray[np.float64],
    n: NDArray[np.int64],
) -> NDArray[np.float64]:
    """``p`` raised to the worst shape's p-value of ``t`` where ``alone`` (NaN in either:
    the other), computed for those effects only (an element-wise function: the same
    values as over every effect, at a fraction of the cost - ~0.3 s at 10,000 cohorts)."""
    out = np.array(np.broadcast_to(p, alone.shape), dtype=np.float64)
    t_alone = np.broadcast_to(t, alone.shape)[alone]
    n_alone = np.broadcast_to(n, alone.shape)[alone]
    out[alone] = np.fmax(out[alone], worst_shape_p(t_alone, n_alone))
    return out


def label_effects(
    plan: StudyPlan,
    contrasts: list[Contrast],
    *,
    gate: int,
    n: NDArray[np.int64],
    p_saving: NDArray[np.float64],
    p_increase: NDArray[np.float64],
    percentile_high: NDArray[np.float64],
    correctness_holds: NDArray[np.bool_],
    graded: NDArray[np.bool_],
    metrics: Sequence[str] = METRICS,
    skewness: NDArray[np.float64] | None = None,
    t_stat: NDArray[np.float64] | None = None,
) -> EffectLabels:
    """Labels of [cohort, contrast, metric] effects (see the module docstring).

    ``correctness_holds``/``graded``: [cohort, contrast]. ``p_saving``/``p_increase``
    are NaN where no interval was computed. ``metrics`` names the last axis (the
    cohort analysis's :data:`METRICS` by default; another analysis, e.g. of quota
    consumption, passes its own names and gets the same rule). ``skewness``: each
    effect's sample skewness ``G1`` (NaN: none), for the skewness gate; None: no gate.
    ``t_stat``: each effect's Student statistic, for the one-cohort rule (applied with
    the gate; None: not applied).
    """
    role = np.broadcast_to(roles(plan, contrasts, metrics)[None], n.shape)
    alpha = plan.alpha
    tested_any = (n >= gate) & np.isfinite(p_saving) & np.isfinite(p_increase)
    descriptive = role == ROLES.index("descriptive")
    shape = None
    refused = np.zeros(n.shape, dtype=bool)
    if skewness is not None and n.size:
        shape = judge_shape(np.where(tested_any, skewness, np.nan), n)
        refused = tested_any & ~descriptive & shape.skewed[None]
    tested_any = tested_any & ~refused
    confirmatory = tested_any & (n >= plan.min_pairs)
    primary = role == ROLES.index("primary")
    secondary = role == ROLES.index("secondary")
    # the decision test's own p (the reported decision interval excludes zero iff p_two <= alpha)
    p_two = np.minimum(1.0, 2.0 * np.minimum(p_saving, p_increase))
    alone = np.zeros(n.shape, dtype=bool)  # the only tested cohort of its contrast's metric
    decided_alone = alone
    if shape is not None and t_stat is not None:
        alone = tested_any & ~descriptive & (shape.cohorts[None] < MIN_COHORTS)
        p_alone = _adjusted(plan, p_saving, p_increase, primary, secondary, confirmatory)
        with np.errstate(invalid="ignore"):
            decided_alone = alone & confirmatory & (p_alone <= alpha)
            p_saving = _at_least_worst_shape(alone, p_saving, -t_stat, n)
            p_increase = _at_least_worst_shape(alone, p_increase, t_stat, n)
    p_adj = _adjusted(plan, p_saving, p_increase, primary, secondary, confirmatory)
    with np.errstate(invalid="ignore"):
        saving = p_saving < p_increase
        significant = confirmatory & (p_adj <= alpha)
        interval_excludes = tested_any & (p_two <= alpha)
        percentile_saving = tested_any & (percentile_high < 0)
    holds = np.broadcast_to(correctness_holds[:, :, None], n.shape)
    was_graded = np.broadcast_to(graded[:, :, None], n.shape)

    code = DECISIONS.index
    why = REASONS.index
    decision = np.full(n.shape, code("no-evidence"), dtype=np.int8)
    reason = np.zeros(n.shape, dtype=np.int8)
    # Reasons for a tested effect that is not a win, most specific last (later wins).
    reason[percentile_saving] = why("decision-interval")
    reason[interval_excludes & ~confirmatory] = why("below-gate")
    reason[interval_excludes & confirmatory & ~significant] = why("adjusted-threshold")
    blocked = significant & saving & ~holds
    reason[blocked & was_graded] = why("correctness-regressed")
    reason[blocked & ~was_graded] = why("correctness-unproven")
    win = significant & saving & holds
    decision[win & primary] = code("primary-win")
    decision[win & secondary] = code("secondary-win")
    decision[significant & ~saving] = code("regression")
    reason[win | (significant & ~saving)] = why("")
    # Not tested at all.
    untested = ~tested_any
    decision[untested] = code("insufficient")
    reason[untested] = np.where(n[untested] == 0, why("not-observed"), why("too-few-pairs"))
    reason[refused] = why("skewed")
    shape_unknown = decided_alone & ~significant
    decision[shape_unknown] = code("insufficient")
    reason[shape_unknown] = why("shape-unknown")
    decision[descriptive & tested_any] = code("not-tested")
    reason[descriptive & tested_any] = why("")
    p_adj = np.where(descriptive | ~confirmatory, np.nan, p_adj)
    return EffectLabels(np.ascontiguousarray(role), decision, reason, p_adj, shape)
