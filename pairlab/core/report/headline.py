"""The report's headline: the answer per (client, client version, model, intervention), in
counts of task cohorts (issue 16, item 4; the intervention, issue 26, names what was
measured: ``id@version:hash``).

Per contrast, how many task cohorts show a win, a regression or no evidence on
four questions, each under its own rule:

* ``tokens``: the plan's primary metric (``totalTokens`` unless the plan names
  another token metric), the plan's decision rule (primary or secondary win);
* ``cost``: ``apiListPriceUsd``, the same rule;
* ``subscription``: the per-cohort subscription verdict (the canary's quota rule:
  supported = win, rejected = regression, inconclusive = no evidence);
* ``correctness``: McNemar's exact test on the graded pairs at the plan's alpha
  (treatment better = win, worse = regression).

``insufficient`` counts cohorts that make no claim on that question (below the
gate, the metric never observed, no graded pair, no quota unit). Reasons are
counted per cohort (a cohort counts once per reason). Counts of cohorts, never a
pooled effect: cohorts are never combined into one number.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pairlab.core.analysis.cohorts import contrasts_of, order_arms
from pairlab.core.analysis.decisions import DECISION_WORDS
from pairlab.core.analysis.metrics import KEY_COLUMNS, METRICS

HEADLINE_SCHEMA_VERSION: Final = 1
COST_METRIC: Final = "apiListPriceUsd"
FALLBACK_TOKEN_METRIC: Final = "totalTokens"
GROUP_KEYS: Final = ("client", "clientVersion", "model", "intervention")
OUTCOMES: Final = ("win", "regression", "noEvidence", "insufficient")
QUESTIONS: Final = ("tokens", "cost", "subscription", "correctness")
LABELS: Final = {
    "tokens": {"win": "win", "regression": "regression", "noEvidence": "no evidence"},
    "cost": {"win": "win", "regression": "regression", "noEvidence": "no evidence"},
    "subscription": {"win": "supported", "regression": "rejected", "noEvidence": "inconclusive"},
    "correctness": {"win": "better", "regression": "worse", "noEvidence": "no difference shown"},
}
_VERDICT_OUTCOME: Final = {
    "supported-candidate": "win",
    "rejected": "regression",
    "inconclusive": "noEvidence",
}


@dataclass
class Tally:
    counts: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)

    def add(self, outcome: str, reasons: Iterable[str] = ()) -> None:
        self.counts[outcome] += 1
        self.reasons.update(set(reasons))

    def to_json(self, **extra: Any) -> dict[str, Any]:
        return {
            **extra,
            **{name: self.counts.get(name, 0) for name in OUTCOMES},
            "reasons": dict(sorted(self.reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        }


def token_metric(plan: Mapping[str, Any], contrast: str) -> str:
    """The headline's token metric for a contrast: its primary metric when that is a
    token metric, else the plan's, else totalTokens."""
    by_contrast = plan.get("primary_metric_by_contrast") or {}
    for name in (by_contrast.get(contrast), plan.get("primary_metric")):
        if name in METRICS:
            return str(name)
    return FALLBACK_TOKEN_METRIC


def _effect_outcome(cohort: Mapping[str, Any], t: str, c: str, metric: str) -> tuple[str, str]:
    if cohort.get("status") != "ok":
        return "insufficient", "cohort-below-gate"
    for e in cohort.get("effects", []):
        if (e.get("treatment"), e.get("control"), e.get("metric")) == (t, c, metric):
            words = DECISION_WORDS.get(str(e.get("decision")))
            reason = e.get("reason") or (words.headline_reason if words else "")
            return words.outcome if words else "noEvidence", str(reason)
    return "insufficient", "not-observed"


def _correctness_outcome(
    cohort: Mapping[str, Any], t: str, c: str, alpha: float
) -> tuple[str, str]:
    if cohort.get("status") != "ok":
        return "insufficient", "cohort-below-gate"
    for p in cohort.get("correctness", {}).get("paired", []):
        if (p.get("treatment"), p.get("control")) != (t, c):
            continue
        p_value, diff = p.get("mcnemarP"), p.get("diff")
        if p_value is None or diff is None:
            return "insufficient", "not-graded"
        if p_value <= alpha and diff > 0:
            return "win", ""
        if p_value <= alpha and diff < 0:
            return "regression", ""
        return "noEvidence", ""
    return "insufficient", "not-graded"


def _subscription_outcome(
    verdicts: Mapping[tuple[str, str], Mapping[str, Any]], t: str, c: str
) -> tuple[str, list[str]]:
    verdict = verdicts.get((t, c))
    if verdict is None:
        return "insufficient", ["no-quota-units"]
    outcome = _VERDICT_OUTCOME.get(str(verdict.get("verdict")), "noEvidence")
    reasons = list(verdict.get("reasons", {})) if outcome == "noEvidence" else []
    if outcome == "noEvidence" and verdict.get("belowPrecision"):
        reasons.append("below-precision")
    return outcome, reasons


def _key_of(key: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(key.get(k)) for k in KEY_COLUMNS)


def _arms_of(cohort: Mapping[str, Any]) -> set[str]:
    return {a for a in cohort.get("correctness", {}) if a != "paired"}


def build_headline(
    analysis: Mapping[str, Any], subscription: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The headline JSON (``report.json`` → ``headline``) of an analysis and its
    subscription section."""
    plan = analysis.get("plan", {})
    alpha = float(plan.get("alpha", 0.05))
    verdicts: dict[tuple[str, ...], dict[tuple[str, str], Mapping[str, Any]]] = {}
    for cohort in (subscription or {}).get("cohorts", []):
        verdicts[_key_of(cohort["key"])] = {
            (v["treatment"], v["control"]): v for v in cohort.get("verdicts", [])
        }
    groups: dict[tuple[str, ...], dict[tuple[str, str], dict[str, Tally]]] = {}
    sizes: Counter[tuple[str, ...]] = Counter()
    contrasts_seen: dict[tuple[str, ...], list[tuple[str, str]]] = {}
    for cohort in analysis.get("cohorts", []):
        key = cohort.get("key", {})
        group = tuple(str(key.get(k)) for k in GROUP_KEYS)
        sizes[group] += 1
        arms = _arms_of(cohort)
        tallies = groups.setdefault(group, {})
        cohort_verdicts = verdicts.get(_key_of(key), {})
        for t, c in _contrasts(arms):
            label = f"{t}-vs-{c}"
            contrasts_seen.setdefault(group, [])
            if (t, c) not in contrasts_seen[group]:
                contrasts_seen[group].append((t, c))
            q = tallies.setdefault((t, c), {name: Tally() for name in QUESTIONS})
            metric = token_metric(plan, label)
            outcome, why = _effect_outcome(cohort, t, c, metric)
            q["tokens"].add(outcome, [why] if why else [])
            outcome, why = _effect_outcome(cohort, t, c, COST_METRIC)
            q["cost"].add(outcome, [why] if why else [])
            outcome, whys = _subscription_outcome(cohort_verdicts, t, c)
            q["subscription"].add(outcome, whys)
            outcome, why = _correctness_outcome(cohort, t, c, alpha)
            q["correctness"].add(outcome, [why] if why else [])
    out_groups = []
    for group in sorted(groups):
        rows = []
        for t, c in contrasts_seen.get(group, []):
            q = groups[group][(t, c)]
            label = f"{t}-vs-{c}"
            rows.append(
                {
                    "treatment": t,
                    "control": c,
                    "cohorts": sum(q["tokens"].counts.values()),
                    "tokens": q["tokens"].to_json(metric=token_metric(plan, label)),
                    "cost": q["cost"].to_json(metric=COST_METRIC),
                    "subscription": q["subscription"].to_json(),
                    "correctness": q["correctness"].to_json(),
                }
            )
        out_groups.append(
            {
                **dict(zip(GROUP_KEYS, group, strict=True)),
                "cohorts": sizes[group],
                "contrasts": rows,
            }
        )
    return {
        "schemaVersion": HEADLINE_SCHEMA_VERSION,
        "alpha": alpha,
        "exploratory": bool(analysis.get("exploratory")),
        "gate": analysis.get("gate"),
        "unit": "task cohorts",
        "questions": list(QUESTIONS),
        "labels": LABELS,
        "groups": out_groups,
    }


def _contrasts(arms: set[str]) -> list[tuple[str, str]]:
    """The cohort's contrasts (both arms present), in the cohort analysis's order."""
    return [(c.treatment, c.control) for c in contrasts_of(order_arms(arms))]


__all__ = [
    "COST_METRIC",
    "HEADLINE_SCHEMA_VERSION",
    "LABELS",
    "OUTCOMES",
    "QUESTIONS",
    "build_headline",
    "token_metric",
]
