"""Paired effects on subscription consumption, per cohort and window (issue 16, item 2).

The same machinery and rule as the token metrics: per cohort, the units
(episodes, or a quota-aware run's intervals) are paired (``pairId`` /
``quotaPairId``), the effect of a window is the mean paired difference
treatment − control in percentage points (negative = less quota), its reported
percentile interval and decision interval come from the cohort analysis's own
bootstrap (:class:`pairlab.core.analysis.engine.CohortBootstrap`, seeded by run
id, cohort key and the pairs resampled), and the decision labels from
:func:`pairlab.core.analysis.decisions.label_effects` with the quota metrics as the
metric axis: the plan's gate and minimum pairs, its primary/secondary roles,
Holm/BH within the subscription family, and correctness that did not regress
(the cohort's paired correctness from the cohort analysis).

A pair whose consumption is null on either side is left out of that window's
effect and counted: ``excludedNull`` pairs, and ``excludedByReason`` the null
units among them by reason. Null never enters an effect as 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import polars as pl

from pairlab.core.analysis.decisions import (
    DECISIONS,
    REASONS,
    ROLES,
    WINS,
    EffectLabels,
    label_effects,
)
from pairlab.core.analysis.engine import RESULTS, CohortBootstrap, Settings
from pairlab.core.analysis.metrics import KEY_COLUMNS, Contrast
from pairlab.core.analysis.study_plan import StudyPlan
from pairlab.core.quota.consumption import ACCOUNT_WINDOW_COLUMNS
from pairlab.core.subscription.units import CohortKey

# (window, consumption column, reason column) in the metric axis's order
WINDOW_METRICS: Final = tuple(
    (window, value, reason) for window, (value, reason, _p) in ACCOUNT_WINDOW_COLUMNS.items()
)
METRIC_NAMES: Final = tuple(value for _w, value, _r in WINDOW_METRICS)


@dataclass(frozen=True)
class Correctness:
    """A cohort's paired correctness for one contrast, from the cohort analysis."""

    holds: bool  # graded pairs exist and the treatment's rate is not below the control's
    graded: bool


@dataclass
class _Cohort:
    key: CohortKey
    pair_ids: list[str]
    diffs: np.ndarray  # [pairs, contrast, metric]
    applies: np.ndarray  # [contrast]
    complete: int
    null_pairs: np.ndarray  # [contrast, metric]
    null_reasons: list[list[Counter[str]]]  # [contrast][metric]


def _cohort(key: CohortKey, rows: pl.DataFrame, contrasts: Sequence[Contrast]) -> _Cohort:
    pair_ids = sorted(set(rows["pairId"].to_list()))
    where = {p: i for i, p in enumerate(pair_ids)}
    n_p, n_m = len(pair_ids), len(WINDOW_METRICS)
    values: dict[str, np.ndarray] = {}
    reasons: dict[str, list[list[str | None]]] = {}
    present: dict[str, np.ndarray] = {}
    for row in rows.iter_rows(named=True):
        arm = row["arm"]
        if arm not in values:
            values[arm] = np.full((n_p, n_m), np.nan)
            reasons[arm] = [[None] * n_m for _ in range(n_p)]
            present[arm] = np.zeros(n_p, dtype=bool)
        p = where[row["pairId"]]
        present[arm][p] = True
        for i, (_w, value_col, reason_col) in enumerate(WINDOW_METRICS):
            value = row[value_col]
            if value is not None:
                values[arm][p, i] = value
            else:
                reasons[arm][p][i] = row[reason_col] or "unexplained-null"
    arms = list(values)
    complete = np.logical_and.reduce([present[a] for a in arms]) if len(arms) >= 2 else None
    n_c = len(contrasts)
    diffs = np.full((n_p, n_c, n_m), np.nan)
    applies = np.zeros(n_c, dtype=bool)
    null_pairs = np.zeros((n_c, n_m), dtype=np.int64)
    null_reasons: list[list[Counter[str]]] = [[Counter() for _ in range(n_m)] for _ in range(n_c)]
    for j, (treatment, control) in enumerate(contrasts):
        if treatment not in values or control not in values:
            continue
        applies[j] = True
        diffs[:, j, :] = values[treatment] - values[control]
        both = present[treatment] & present[control]
        for i in range(n_m):
            for at in np.flatnonzero(both & np.isnan(diffs[:, j, i])).tolist():
                null_pairs[j, i] += 1
                for arm in (control, treatment):
                    why = reasons[arm][at][i]
                    if why is not None:
                        null_reasons[j][i][why] += 1
    return _Cohort(
        key=key,
        pair_ids=pair_ids,
        diffs=diffs,
        applies=applies,
        complete=int(complete.sum()) if complete is not None else 0,
        null_pairs=null_pairs,
        null_reasons=null_reasons,
    )


def _num(value: float) -> float | None:
    return None if not np.isfinite(value) else float(value)


def quota_effects(
    frame: pl.DataFrame,
    *,
    run_id: str,
    gate: int,
    plan: StudyPlan,
    contrasts: Sequence[Contrast],
    correctness: Mapping[tuple[CohortKey, str], Correctness],
    n_resamples: int = 10_000,
    confidence: float = 0.95,
) -> dict[CohortKey, dict[str, Any]]:
    """Per cohort of ``frame`` (:func:`pairlab.core.subscription.units.units_frame`):
    ``status`` (ok when its complete pairs reach the gate), ``pairs``, ``exploratory``
    and ``effects`` (the token analysis's effect fields + ``window`` and
    ``excludedByReason``) for each of ``contrasts`` whose two arms it has."""
    kept = frame.filter(~pl.col("excluded"))
    cohorts = [
        _cohort(tuple(str(v) for v in k), rows, contrasts)
        for k, rows in sorted(kept.group_by(list(KEY_COLUMNS)), key=lambda kr: tuple(kr[0]))
    ]
    settings = Settings(
        run_id=run_id,
        contrasts=list(contrasts),
        min_pairs=gate,
        n_resamples=n_resamples,
        confidence=confidence,
        method="percentile",
        decision_confidence=1.0 - plan.alpha,
    )
    ok = np.array([c.complete >= gate for c in cohorts], dtype=bool)
    results = _bootstrap(cohorts, ok, settings)
    k, n_c, n_m = len(cohorts), len(contrasts), len(WINDOW_METRICS)
    applies = np.array([c.applies for c in cohorts], dtype=bool).reshape(k, n_c)
    n = np.array([(~np.isnan(c.diffs)).sum(axis=0) for c in cohorts], dtype=np.int64).reshape(
        k, n_c, n_m
    )
    held = [[correctness.get((c.key, ct.label)) for ct in contrasts] for c in cohorts]
    labels = label_effects(
        plan,
        list(contrasts),
        gate=gate,
        n=np.where(applies[:, :, None] & ok[:, None, None], n, 0),
        p_saving=results["p_saving"],
        p_increase=results["p_increase"],
        percentile_high=results["high"],
        correctness_holds=np.array(
            [[h is not None and h.holds for h in row] for row in held], dtype=bool
        ).reshape(k, n_c),
        graded=np.array(
            [[h is not None and h.graded for h in row] for row in held], dtype=bool
        ).reshape(k, n_c),
        metrics=METRIC_NAMES,
    )
    with np.errstate(invalid="ignore"):
        results["p_two"] = np.minimum(
            1.0, 2.0 * np.minimum(results["p_saving"], results["p_increase"])
        )
    out: dict[CohortKey, dict[str, Any]] = {}
    for idx, cohort in enumerate(cohorts):
        effects = [
            _effect_json(cohort, contrast, i, results, labels, n, (idx, j, i))
            for j, contrast in enumerate(contrasts)
            if ok[idx] and applies[idx, j]
            for i in range(n_m)
        ]
        out[cohort.key] = {
            "status": "ok" if ok[idx] else "insufficient",
            "pairs": cohort.complete,
            "exploratory": bool(ok[idx]) and cohort.complete < plan.min_pairs,
            "effects": effects,
        }
    return out


def _bootstrap(
    cohorts: Sequence[_Cohort], ok: np.ndarray, settings: Settings
) -> dict[str, np.ndarray]:
    """The cohort analysis's bootstrap of each sufficient cohort: [cohort, contrast, window]
    arrays of :data:`RESULTS` (NaN where a cohort was not resampled)."""
    shape = (len(cohorts), len(settings.contrasts), len(WINDOW_METRICS))
    results = {name: np.full(shape, np.nan) for name in RESULTS}
    engine = CohortBootstrap(settings, results)
    for idx, cohort in enumerate(cohorts):
        if ok[idx]:
            engine.run(idx, cohort.key, cohort.pair_ids, cohort.diffs, cohort.applies, [])
    return results


def _effect_json(
    cohort: _Cohort,
    contrast: Contrast,
    i: int,
    results: Mapping[str, np.ndarray],
    labels: EffectLabels,
    n: np.ndarray,
    at: tuple[int, int, int],
) -> dict[str, Any]:
    """One window's effect (metric ``i``) of ``contrast`` in ``cohort`` (``at``: its index)."""
    j = at[1]
    decision = DECISIONS[labels.decision[at]]
    reason = REASONS[labels.reason[at]]
    return {
        "treatment": contrast.treatment,
        "control": contrast.control,
        "metric": METRIC_NAMES[i],
        "window": WINDOW_METRICS[i][0],
        "estimate": _num(results["estimate"][at]),
        "ciLow": _num(results["low"][at]),
        "ciHigh": _num(results["high"][at]),
        "n": int(n[at]),
        "excludedNull": int(cohort.null_pairs[j, i]),
        "excludedByReason": dict(sorted(cohort.null_reasons[j][i].items())),
        "win": decision in WINS,
        "role": ROLES[labels.role[at]],
        "decision": decision,
        "reason": reason or None,
        "decisionLow": _num(results["decision_low"][at]),
        "decisionHigh": _num(results["decision_high"][at]),
        "pValue": _num(results["p_two"][at]),
        "pAdjusted": _num(labels.p_adjusted[at]),
    }


__all__ = ["METRIC_NAMES", "WINDOW_METRICS", "Correctness", "quota_effects"]
