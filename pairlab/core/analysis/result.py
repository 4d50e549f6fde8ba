"""The result of a cohort analysis and its three renderings.

:class:`CohortAnalysis` holds every cohort's results as NumPy arrays (cohort x
contrast x metric), so a run of 10,000 cohorts is not 550,000 Python objects
until someone asks for JSON. Renderings:

* :meth:`CohortAnalysis.to_json` - the ``pairlab aggregate --json`` shape
  (issue 2); null stays null (NaN never leaks into JSON);
* :func:`effects_frame` - one row per reported effect (``effects.parquet``), from the
  JSON form, so a run's report and its parquet come from the same data;
* :func:`pairlab.core.analysis.table.render_cohort_table` - a plain-text/markdown
  table for the CLI and the report.

Beyond issue 2's keys each cohort carries ``excluded`` (episodes left out by
the pre-registered exclusion rules) and ``flags`` (unknown versions/models,
BCa notes), because those rules require them to be reported, never silent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from operator import itemgetter
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
from pairlab.core.analysis.metrics import KEY_COLUMNS, METRICS, Contrast
from pairlab.core.analysis.study_plan import ResolvedPlan
from pairlab.core.stats.one_cohort import ONE_COHORT_RULE
from pairlab.core.stats.skew_gate import (
    MAX_CALIBRATED_PAIRS,
    SKEW_GATE_RULE,
    SKEW_TEST_LEVEL,
)
from pairlab.core.stats.studentized import DECISION_DESCRIPTION, DECISION_METHOD

__all__ = [
    "KEY_COLUMNS",
    "METRICS",
    "CohortAnalysis",
    "Contrast",
    "effects_frame",
]

_FLAGGED_UNKNOWN: Final = ("clientVersion", "model", "modelVersion")
ANALYSIS_SCHEMA_VERSION: Final = 2


def _json_numbers(values: np.ndarray) -> list[Any]:
    """Nested lists of ``values`` with NaN and +-inf as None (null)."""
    out = values.astype(object)
    out[~np.isfinite(values)] = None
    return out.tolist()  # type: ignore[no-any-return]


def _num(value: float) -> float | None:
    """JSON number, or null for NaN (no value) and +-inf (an unbounded interval end)."""
    return None if math.isnan(value) or math.isinf(value) else value


@dataclass
class CohortAnalysis:
    """Every cohort of one analysis. Arrays are indexed [cohort, contrast, metric].

    ``min_pairs`` is the analysis gate; ``plan`` the study plan whose decision
    rule labels the effects (:mod:`pairlab.core.analysis.decisions`).
    """

    run_id: str
    min_pairs: int
    n_resamples: int
    confidence: float
    method: str
    plan: ResolvedPlan
    keys: pl.DataFrame
    arms: list[str]
    contrasts: list[Contrast]
    ok: np.ndarray
    pairs: np.ndarray
    excluded: np.ndarray
    join_coverage: np.ndarray  # [cohort, (exact, fallback, missing)]
    has_arm: np.ndarray
    correct: np.ndarray  # [cohort, arm]
    graded: np.ndarray  # [cohort, arm]
    applies: np.ndarray  # [cohort, contrast]: both arms present in the cohort
    cells: dict[str, np.ndarray]  # paired 2x2 table per [cohort, contrast]
    estimate: np.ndarray
    low: np.ndarray  # the reported (percentile or BCa) interval
    high: np.ndarray
    decision_low: np.ndarray  # the decision interval at 1 - plan alpha
    decision_high: np.ndarray
    p_saving: np.ndarray  # one-sided p-values of the decision test
    p_increase: np.ndarray
    n: np.ndarray
    excluded_null: np.ndarray
    # each effect's sample skewness, judged by the skewness gate (None: no gate)
    skewness: np.ndarray | None = None
    # each effect's Student statistic, for the one-cohort rule (None: not applied)
    t_stat: np.ndarray | None = None
    notes: list[list[str]] = field(default_factory=list)
    # how the cohorts were resampled (cohort_engine.run_cohorts; not in the JSON: the
    # numbers are the same either way)
    engine: str = ""

    @property
    def graded_pairs(self) -> np.ndarray:
        """[cohort, contrast]: pairs where both arms were graded."""
        return np.asarray(sum(self.cells[c] for c in "abcd"))

    @property
    def correctness_holds(self) -> np.ndarray:
        """[cohort, contrast]: graded pairs exist and treatment's rate >= control's."""
        return np.asarray((self.graded_pairs > 0) & (self.cells["b"] >= self.cells["c"]))

    @property
    def exploratory(self) -> bool:
        """The gate is below the plan's pre-registered minimum pairs."""
        return self.min_pairs < self.plan.plan.min_pairs

    @property
    def all_below_gate(self) -> bool:
        """No cohort has the gate's complete pairs (or there is none): nothing was decided.
        Not ``exploratory`` (that is the gate against the plan), e.g. a 1-repetition run."""
        return not bool(np.any(np.asarray(self.pairs) >= self.min_pairs))

    def labels(self) -> EffectLabels:
        return label_effects(
            self.plan.plan,
            self.contrasts,
            gate=self.min_pairs,
            n=np.where(self.applies[:, :, None] & self.ok[:, None, None], self.n, 0),
            p_saving=self.p_saving,
            p_increase=self.p_increase,
            percentile_high=self.high,
            correctness_holds=self.correctness_holds,
            graded=self.graded_pairs > 0,
            skewness=self.skewness,
            t_stat=self.t_stat,
        )

    @property
    def win(self) -> np.ndarray:
        """[cohort, contrast, metric]: a primary or secondary win under the plan."""
        return np.asarray(self.labels().win & self.ok[:, None, None] & self.applies[:, :, None])

    def flags(self, idx: int, key: dict[str, Any] | None = None) -> list[str]:
        """Cohort ``idx``'s unknown versions/models and notes (``key``: its row of ``keys``,
        when the caller has it)."""
        row = self.keys.row(idx, named=True) if key is None else key
        found = [f"{name} unknown" for name in _FLAGGED_UNKNOWN if row[name] == "unknown"]
        return found + list(self.notes[idx] if idx < len(self.notes) else [])

    def header(self, labels: EffectLabels | None = None) -> dict[str, Any]:
        """What the analysis used: gate, plan, the two intervals, whether it is exploratory
        (``labels``: :meth:`labels`, when the caller has them)."""
        plan = self.plan.plan
        return {
            "schemaVersion": ANALYSIS_SCHEMA_VERSION,
            "runId": self.run_id,
            "gate": self.min_pairs,
            "exploratory": self.exploratory,
            "allBelowGate": self.all_below_gate,
            "plan": self.plan.summary(),
            "reportedInterval": {
                "method": self.method,
                "confidence": self.confidence,
                "resamples": self.n_resamples,
                "fields": ["ciLow", "ciHigh"],
            },
            "decisionRule": {
                "interval": DECISION_METHOD,
                "description": DECISION_DESCRIPTION,
                "confidence": 1.0 - plan.alpha,
                "resamples": self.n_resamples,
                "fields": ["decisionLow", "decisionHigh", "pValue", "pAdjusted"],
                "primaryCorrection": "holm",
                "secondaryCorrection": plan.secondary_correction,
                "alpha": plan.alpha,
                "minPairs": plan.min_pairs,
                "decides": "decision interval",
            },
            "shapeGate": self.shape_gate(labels),
        }

    def shape_gate(self, labels: EffectLabels | None = None) -> dict[str, Any]:
        """The skewness gate (:mod:`pairlab.core.stats.skew_gate`): its rule, and each
        contrast's metric it found skewed, with the pairs needed (null: more than the
        calibration reaches) - the effects behind it are ``insufficient`` (``skewed``); and
        the one-cohort rule (:mod:`pairlab.core.stats.one_cohort`) with the contrasts'
        metrics it tested (one tested cohort: their shape cannot be judged)."""
        shape = (labels or self.labels()).shape
        skewed: list[dict[str, Any]] = []
        if shape is not None:
            for j, i in zip(*np.nonzero(shape.skewed), strict=True):
                contrast, needed = self.contrasts[j], int(shape.pairs_needed[j, i])
                skewed.append(
                    {
                        "treatment": contrast.treatment,
                        "control": contrast.control,
                        "metric": METRICS[i],
                        "towards": "costs" if shape.direction[j, i] > 0 else "savings",
                        "cohorts": int(shape.cohorts[j, i]),
                        "meanSkewness": _num(float(shape.mean_skewness[j, i])),
                        "pairsNeeded": needed if needed > 0 else None,
                    }
                )
        alone: list[dict[str, Any]] = []
        if shape is not None and self.t_stat is not None:
            for j, i in zip(*np.nonzero(shape.cohorts == 1), strict=True):
                contrast = self.contrasts[j]
                alone.append(
                    {
                        "treatment": contrast.treatment,
                        "control": contrast.control,
                        "metric": METRICS[i],
                    }
                )
        return {
            "rule": SKEW_GATE_RULE,
            "oneCohortRule": ONE_COHORT_RULE,
            "oneCohort": alone,
            "level": SKEW_TEST_LEVEL,
            "calibratedPairs": MAX_CALIBRATED_PAIRS,  # pairsNeeded null: more than these
            "judged": shape is not None,
            "skewed": skewed,
        }

    def to_json(self) -> dict[str, Any]:
        labels = self.labels()  # once (label_effects: ~0.3 s at 10,000 cohorts)
        cols = self._json_columns(labels)
        # every effect reported (ok cohorts, applicable contrasts, each metric), by decision
        counts = self.decision_counts(labels)
        cohorts = [
            self._cohort_json(idx, key, cols)
            for idx, key in enumerate(self.keys.iter_rows(named=True))
        ]
        return {**self.header(labels), "decisions": counts, "cohorts": cohorts}

    def decision_counts(self, labels: EffectLabels) -> dict[str, int]:
        """Every effect reported (ok cohorts, applicable contrasts, each metric), by decision."""
        reported = np.broadcast_to(
            (self.ok[:, None] & self.applies)[:, :, None], labels.decision.shape
        )
        tally = np.bincount(labels.decision[reported], minlength=len(DECISIONS)).tolist()
        return dict(zip(DECISIONS, tally, strict=True))

    def json_arrays(self, labels: EffectLabels) -> JsonArrays:
        """The values of :meth:`to_json` beyond the stored arrays, computed as whole arrays
        (NaN/inf still in them)."""
        from pairlab.core.stats.proportions import (
            mcnemar_exact_p,
            newcombe_paired_interval,
            wilson_interval,
        )

        with np.errstate(invalid="ignore"):
            p_two = np.minimum(1.0, 2.0 * np.minimum(self.p_saving, self.p_increase))
        a, b, c, d = (self.cells[x] for x in "abcd")
        return JsonArrays(
            p_two=p_two,
            win=np.isin(labels.decision, [DECISIONS.index(w) for w in WINS]),
            wilson=wilson_interval(self.correct, self.graded, self.confidence),
            graded_pairs=a + b + c + d,
            mcnemar_p=mcnemar_exact_p(b, c),
            diff=newcombe_paired_interval(a, b, c, d, self.confidence),
        )

    def _json_columns(self, labels: EffectLabels) -> _JsonColumns:
        """Every per-effect value converted once, as whole arrays (NaN/inf -> None): the
        per-cohort loop of :meth:`to_json` only indexes (the serial part of a large run)."""
        arrays = self.json_arrays(labels)
        est, lo, hi, dlo, dhi, p_list, padj_list = (
            _json_numbers(x)
            for x in (
                self.estimate,
                self.low,
                self.high,
                self.decision_low,
                self.decision_high,
                arrays.p_two,
                labels.p_adjusted,
            )
        )
        role_l = np.asarray(ROLES, dtype=object)[labels.role].tolist()
        dec_l = np.asarray(DECISIONS, dtype=object)[labels.decision].tolist()
        why_l = np.asarray([r or None for r in REASONS], dtype=object)[labels.reason].tolist()
        n_list, null_list = self.n.tolist(), self.excluded_null.tolist()
        return _JsonColumns(
            effect=(
                est,
                lo,
                hi,
                n_list,
                null_list,
                arrays.win.tolist(),
                role_l,
                dec_l,
                why_l,
                dlo,
                dhi,
                p_list,
                padj_list,
            ),
            wilson=arrays.wilson,
            graded_pairs=arrays.graded_pairs,
            mcnemar_p=arrays.mcnemar_p,
            diff=arrays.diff,
            applies=self.applies.tolist(),
            ok=self.ok.tolist(),
        )

    def _cohort_json(self, idx: int, key: dict[str, Any], cols: _JsonColumns) -> dict[str, Any]:
        """One cohort of :meth:`to_json`."""
        is_ok = bool(cols.ok[idx])
        effects: list[dict[str, Any]] = []
        paired = []
        if is_ok:
            for j, contrast in enumerate(self.contrasts):
                if not cols.applies[idx][j]:
                    continue
                effects += _effects_json(contrast, [col[idx][j] for col in cols.effect])
                diff, d_low, d_high = cols.diff
                graded = int(cols.graded_pairs[idx, j])
                paired.append(
                    {
                        "treatment": contrast.treatment,
                        "control": contrast.control,
                        "mcnemarP": float(cols.mcnemar_p[idx, j]) if graded else None,
                        "diff": _num(float(diff[idx, j])),
                        "diffLow": _num(float(d_low[idx, j])),
                        "diffHigh": _num(float(d_high[idx, j])),
                    }
                )
        exact, fallback, missing = (int(x) for x in self.join_coverage[idx])
        return {
            "key": key,
            "status": "ok" if is_ok else "insufficient",
            "pairs": int(self.pairs[idx]),
            "exploratory": is_ok and int(self.pairs[idx]) < self.plan.plan.min_pairs,
            "excluded": int(self.excluded[idx]),
            "flags": self.flags(idx, key),
            "effects": effects,
            "correctness": {**self._correctness_json(idx, cols), "paired": paired},
            "joinCoverage": {"exact": exact, "fallback": fallback, "missing": missing},
        }

    def _correctness_json(self, idx: int, cols: _JsonColumns) -> dict[str, Any]:
        """Per arm of cohort ``idx``: correct of graded, the rate and its Wilson interval."""
        w_low, w_high = cols.wilson
        correctness: dict[str, Any] = {}
        for ai, arm in enumerate(self.arms):
            if not self.has_arm[idx, ai]:
                continue
            n_graded = int(self.graded[idx, ai])
            right = int(self.correct[idx, ai])
            correctness[arm] = {
                "correct": right,
                "n": n_graded,
                "rate": right / n_graded if n_graded else None,
                "wilsonLow": _num(float(w_low[idx, ai])),
                "wilsonHigh": _num(float(w_high[idx, ai])),
            }
        return correctness


@dataclass(frozen=True)
class JsonArrays:
    """:meth:`CohortAnalysis.json_arrays`: derived values, [cohort, contrast(, metric)]
    or [cohort, arm] (``wilson``)."""

    p_two: np.ndarray  # the two-sided p-value of the decision test
    win: np.ndarray
    wilson: tuple[np.ndarray, np.ndarray]
    graded_pairs: np.ndarray
    mcnemar_p: np.ndarray
    diff: tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class _JsonColumns:
    """:meth:`CohortAnalysis.to_json`'s inputs, converted once for every cohort."""

    effect: tuple[list[Any], ...]  # per field of EFFECT_FIELDS from "estimate" on
    wilson: tuple[np.ndarray, np.ndarray]
    graded_pairs: np.ndarray
    mcnemar_p: np.ndarray
    diff: tuple[np.ndarray, np.ndarray, np.ndarray]
    applies: list[list[bool]]
    ok: list[bool]


def _effects_json(contrast: Contrast, values: list[list[Any]]) -> list[dict[str, Any]]:
    """The effects of one contrast in one cohort, a metric each (``values``: per field,
    per metric)."""
    treatment, control = contrast
    return [
        {
            "treatment": treatment,
            "control": control,
            "metric": metric,
            "estimate": e_,
            "ciLow": l_,
            "ciHigh": h_,
            "n": n_,
            "excludedNull": x_,
            "win": win_,
            "role": r_,
            "decision": d_,
            "reason": w_,
            "decisionLow": dl_,
            "decisionHigh": dh_,
            "pValue": p_,
            "pAdjusted": pa_,
        }
        for metric, e_, l_, h_, n_, x_, win_, r_, d_, w_, dl_, dh_, p_, pa_ in zip(
            METRICS, *values, strict=True
        )
    ]


EFFECT_FIELDS: Final = (
    "treatment",
    "control",
    "metric",
    "estimate",
    "ciLow",
    "ciHigh",
    "n",
    "excludedNull",
    "win",
    "role",
    "decision",
    "reason",
    "decisionLow",
    "decisionHigh",
    "pValue",
    "pAdjusted",
)
EFFECTS_SCHEMA: Final[dict[str, pl.DataType]] = {
    **{name: pl.String() for name in KEY_COLUMNS},
    "status": pl.String(),
    "pairs": pl.Int64(),
    "exploratory": pl.Boolean(),
    "treatment": pl.String(),
    "control": pl.String(),
    "metric": pl.String(),
    "estimate": pl.Float64(),
    "ciLow": pl.Float64(),
    "ciHigh": pl.Float64(),
    "n": pl.Int64(),
    "excludedNull": pl.Int64(),
    "win": pl.Boolean(),
    "role": pl.String(),
    "decision": pl.String(),
    "reason": pl.String(),
    "decisionLow": pl.Float64(),
    "decisionHigh": pl.Float64(),
    "pValue": pl.Float64(),
    "pAdjusted": pl.Float64(),
}


def effects_frame(analysis: dict[str, Any]) -> pl.DataFrame:
    """``effects.parquet``: one row per reported effect of an analysis in its JSON form
    (:meth:`CohortAnalysis.to_json`, ``pairlab aggregate --json``), built column by
    column; nulls kept. Insufficient cohorts report no effects, so have no rows."""
    columns: dict[str, list[Any]] = {name: [] for name in EFFECTS_SCHEMA}
    for cohort in analysis.get("cohorts", []):
        effects = cohort.get("effects", [])
        if not effects:
            continue
        key = cohort.get("key", {})
        for name in KEY_COLUMNS:
            columns[name] += [key.get(name)] * len(effects)
        columns["status"] += [cohort.get("status")] * len(effects)
        columns["pairs"] += [cohort.get("pairs")] * len(effects)
        columns["exploratory"] += [cohort.get("exploratory")] * len(effects)
        for name in EFFECT_FIELDS:
            try:  # this analysis's own JSON has every field: one C-level pass per column
                columns[name] += map(itemgetter(name), effects)
            except KeyError:  # another producer's JSON may lack some (null)
                columns[name] += [e.get(name) for e in effects]
    return pl.DataFrame(columns, schema=EFFECTS_SCHEMA)
