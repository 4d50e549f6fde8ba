"""The result of a cohort analysis and its three renderings.

:class:`CohortAnalysis` holds every cohort's results as NumPy arrays (cohort x
contrast x metric), so a run of 10,000 cohorts is not 550,000 Python objects
until someone asks for JSON. Renderings:

* :meth:`CohortAnalysis.to_json` - the ``pairlab aggregate --json`` shape
  (issue 2); null stays null (NaN never leaks into JSON);
* :func:`effects_frame` - one row per reported effect (``effects.parquet``), from the
  JSON form, so a run's report and its parquet come from the same data;
* :func:`render_cohort_table` - a plain-text/markdown table for the CLI and
  the report.

Beyond issue 2's keys each cohort carries ``excluded`` (episodes left out by
the pre-registered exclusion rules) and ``flags`` (unknown versions/models,
BCa notes), because those rules require them to be reported, never silent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import numpy as np
import polars as pl

KEY_COLUMNS: Final = ("client", "clientVersion", "model", "modelVersion", "taskId", "stratum")
# Effect metrics, named as the episode record's camelCase fields; all lower-is-better.
METRICS: Final = (
    "uncachedInputTokens",
    "cachedInputTokens",
    "cacheWrite5mTokens",
    "cacheWrite1hTokens",
    "cacheWriteTokens",
    "outputTokens",
    "reasoningTokens",
    "totalTokens",
    "toolCalls",
    "latencyMs",
    "costUsd",
    "apiListPriceUsd",
)
_FLAGGED_UNKNOWN: Final = ("clientVersion", "model", "modelVersion")


class Contrast(NamedTuple):
    treatment: str
    control: str

    @property
    def label(self) -> str:
        return f"{self.treatment}-vs-{self.control}"


def _num(value: float) -> float | None:
    return None if math.isnan(value) else value


@dataclass
class CohortAnalysis:
    """Every cohort of one analysis. Arrays are indexed [cohort, contrast, metric]."""

    run_id: str
    min_pairs: int
    n_resamples: int
    confidence: float
    method: str
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
    low: np.ndarray
    high: np.ndarray
    n: np.ndarray
    excluded_null: np.ndarray
    notes: list[list[str]] = field(default_factory=list)

    @property
    def correctness_holds(self) -> np.ndarray:
        """[cohort, contrast]: graded pairs exist and treatment's rate >= control's."""
        graded = sum(self.cells[c] for c in "abcd")
        return np.asarray((graded > 0) & (self.cells["b"] >= self.cells["c"]))

    @property
    def win(self) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            saving = self.high < 0
        return np.asarray(
            self.ok[:, None, None]
            & self.applies[:, :, None]
            & (self.n >= self.min_pairs)
            & saving
            & self.correctness_holds[:, :, None]
        )

    def flags(self, idx: int) -> list[str]:
        row = self.keys.row(idx, named=True)
        found = [f"{name} unknown" for name in _FLAGGED_UNKNOWN if row[name] == "unknown"]
        return found + list(self.notes[idx] if idx < len(self.notes) else [])

    def to_json(self) -> dict[str, Any]:
        from pairlab.core.stats.proportions import (
            mcnemar_exact_p,
            newcombe_paired_interval,
            wilson_interval,
        )

        w_low, w_high = wilson_interval(self.correct, self.graded, self.confidence)
        a, b, c, d = (self.cells[x] for x in "abcd")
        p_value = mcnemar_exact_p(b, c)
        diff, d_low, d_high = newcombe_paired_interval(a, b, c, d, self.confidence)
        win = self.win
        est, lo, hi = self.estimate.tolist(), self.low.tolist(), self.high.tolist()
        n_list, null_list, win_list = self.n.tolist(), self.excluded_null.tolist(), win.tolist()
        cohorts = []
        for idx, key in enumerate(self.keys.iter_rows(named=True)):
            is_ok = bool(self.ok[idx])
            effects = []
            paired = []
            if is_ok:
                for j, contrast in enumerate(self.contrasts):
                    if not self.applies[idx, j]:
                        continue
                    for i, metric in enumerate(METRICS):
                        effects.append(
                            {
                                "treatment": contrast.treatment,
                                "control": contrast.control,
                                "metric": metric,
                                "estimate": _num(est[idx][j][i]),
                                "ciLow": _num(lo[idx][j][i]),
                                "ciHigh": _num(hi[idx][j][i]),
                                "n": n_list[idx][j][i],
                                "excludedNull": null_list[idx][j][i],
                                "win": win_list[idx][j][i],
                            }
                        )
                    graded = int(a[idx, j] + b[idx, j] + c[idx, j] + d[idx, j])
                    paired.append(
                        {
                            "treatment": contrast.treatment,
                            "control": contrast.control,
                            "mcnemarP": float(p_value[idx, j]) if graded else None,
                            "diff": _num(float(diff[idx, j])),
                            "diffLow": _num(float(d_low[idx, j])),
                            "diffHigh": _num(float(d_high[idx, j])),
                        }
                    )
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
            correctness["paired"] = paired
            exact, fallback, missing = (int(x) for x in self.join_coverage[idx])
            cohorts.append(
                {
                    "key": key,
                    "status": "ok" if is_ok else "insufficient",
                    "pairs": int(self.pairs[idx]),
                    "excluded": int(self.excluded[idx]),
                    "flags": self.flags(idx),
                    "effects": effects,
                    "correctness": correctness,
                    "joinCoverage": {"exact": exact, "fallback": fallback, "missing": missing},
                }
            )
        return {"cohorts": cohorts}


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
)
EFFECTS_SCHEMA: Final[dict[str, pl.DataType]] = {
    **{name: pl.String() for name in KEY_COLUMNS},
    "status": pl.String(),
    "pairs": pl.Int64(),
    "treatment": pl.String(),
    "control": pl.String(),
    "metric": pl.String(),
    "estimate": pl.Float64(),
    "ciLow": pl.Float64(),
    "ciHigh": pl.Float64(),
    "n": pl.Int64(),
    "excludedNull": pl.Int64(),
    "win": pl.Boolean(),
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
        for name in EFFECT_FIELDS:
            columns[name] += [e.get(name) for e in effects]
    return pl.DataFrame(columns, schema=EFFECTS_SCHEMA)


def _fmt(value: float | None) -> str:
    if value is None:
        return "null"
    return f"{value:.4g}" if abs(value) < 1e5 else f"{value:.0f}"


def render_cohort_table(analysis: CohortAnalysis, metrics: tuple[str, ...] | None = None) -> str:
    """A markdown table: one row per cohort x contrast x metric (insufficient: one row)."""
    shown = metrics or METRICS
    data = analysis.to_json()
    lines = [
        f"Cohort analysis (run {analysis.run_id}; gate {analysis.min_pairs} pairs; "
        f"{analysis.method} bootstrap, {analysis.n_resamples} resamples, "
        f"{analysis.confidence:.0%}; effect = treatment - control, negative = fewer)",
        "",
        "| cohort | status | pairs | contrast | metric | effect | CI | n | nulls | win |",
        "| --- | --- | ---: | --- | --- | ---: | --- | ---: | ---: | --- |",
    ]
    for cohort in data["cohorts"]:
        k = cohort["key"]
        label = (
            f"{k['client']} {k['clientVersion']} / {k['model']} {k['modelVersion']} / "
            f"{k['taskId']} / {k['stratum']}"
        )
        head = f"| {label} | {cohort['status']} | {cohort['pairs']} |"
        # Metrics never observed in this cohort (n = 0) stay in the JSON, not in the table.
        rows = [e for e in cohort["effects"] if e["metric"] in shown and e["n"] > 0]
        if not rows:
            verdict = "no claim" if cohort["status"] != "ok" else "no observed metric"
            lines.append(f"{head} - | - | - | - | - | - | {verdict} |")
            continue
        for e in rows:
            ci = "null" if e["ciLow"] is None else f"[{_fmt(e['ciLow'])}, {_fmt(e['ciHigh'])}]"
            lines.append(
                f"{head} {e['treatment']} vs {e['control']} | {e['metric']} | "
                f"{_fmt(e['estimate'])} | {ci} | {e['n']} | {e['excludedNull']} | "
                f"{'WIN' if e['win'] else 'no'} |"
            )
    lines += [
        "",
        "| cohort | arm | correct | rate | Wilson CI |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for cohort in data["cohorts"]:
        k = cohort["key"]
        label = (
            f"{k['client']} {k['clientVersion']} / {k['model']} / {k['taskId']} / {k['stratum']}"
        )
        for arm, c in cohort["correctness"].items():
            if arm == "paired":
                continue
            rate = "null" if c["rate"] is None else f"{c['rate']:.3f}"
            wil = (
                "null"
                if c["wilsonLow"] is None
                else f"[{c['wilsonLow']:.3f}, {c['wilsonHigh']:.3f}]"
            )
            lines.append(f"| {label} | {arm} | {c['correct']}/{c['n']} | {rate} | {wil} |")
        for p in cohort["correctness"]["paired"]:
            diff = "null" if p["diff"] is None else f"{p['diff']:+.3f}"
            ci = "null" if p["diffLow"] is None else f"[{p['diffLow']:+.3f}, {p['diffHigh']:+.3f}]"
            mc = "null" if p["mcnemarP"] is None else f"{p['mcnemarP']:.3g}"
            lines.append(
                f"| {label} | {p['treatment']} - {p['control']} | diff {diff} | McNemar p {mc} | {ci} |"
            )
        if cohort["flags"] or cohort["excluded"]:
            lines.append(
                f"| {label} | flags | {cohort['excluded']} excluded | | {'; '.join(cohort['flags'])} |"
            )
    return "\n".join(lines) + "\n"
