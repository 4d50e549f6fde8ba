"""The cohort analysis as text: decision labels, the decision rule, the markdown table.

Shared by ``pairlab aggregate`` (the table) and the run report (labels, rule).
"""

from __future__ import annotations

from typing import Any, Final

from pairlab.core.analysis.decisions import DECISION_WORDS, REASON_WORDS
from pairlab.core.analysis.result import METRICS, CohortAnalysis


def _fmt(value: float | None) -> str:
    if value is None:
        return "null"
    return f"{value:.4g}" if abs(value) < 1e5 else f"{value:.0f}"


REASON_TEXT: Final = {k: w.table for k, w in REASON_WORDS.items() if w.table is not None}


def decision_text(effect: dict[str, Any]) -> str:
    """A short human label of an effect's decision and reason (table and report)."""
    decision = effect.get("decision")
    reason = effect.get("reason")
    words = DECISION_WORDS.get(str(decision))
    text = words.table if words else str(decision)
    return f"{text}: {REASON_TEXT.get(str(reason), reason)}" if reason else text


def _interval(low: float | None, high: float | None) -> str:
    if low is None and high is None:
        return "null"
    lo = "-inf" if low is None else _fmt(low)
    hi = "+inf" if high is None else _fmt(high)
    return f"[{lo}, {hi}]"


def rule_text(header: dict[str, Any]) -> str:
    """One paragraph: which interval decides, the plan, the gate, exploratory or not."""
    rule, plan = header["decisionRule"], header["plan"]
    reported = header["reportedInterval"]
    text = (
        f"Decisions use the {rule['interval']} interval at {rule['confidence']:.0%} "
        f"(alpha {rule['alpha']:g}); the reported interval is the {reported['method']} bootstrap "
        f"at {reported['confidence']:.0%} ({reported['resamples']} resamples). Study plan "
        f"'{plan['id']}' ({plan['source']}, sha256 {plan['sha256'][:12]}): primary "
        f"{plan['primary_metric']} on {', '.join(plan['primary_contrasts'])} (Holm across them); "
        f"secondary metrics {rule['secondaryCorrection']}-adjusted; minimum pairs "
        f"{plan['min_pairs']}; gate {header['gate']}."
    )
    if header.get("exploratory"):
        text += (
            f" EXPLORATORY: the gate ({header['gate']}) is below the pre-registered minimum "
            f"({plan['min_pairs']}); effects with fewer pairs make no claim."
        )
    return text + _skewed_text(header.get("shapeGate") or {})


def _skewed_text(gate: dict[str, Any]) -> str:
    """The skewness gate's findings: each skewed contrast's metric and the pairs it needs."""
    found = gate.get("skewed") or []
    if not found:
        return ""
    parts = []
    for s in found:
        needed = s["pairsNeeded"]
        pairs = (
            f"{needed} pairs per cohort"
            if needed is not None
            else f"more than {gate.get('calibratedPairs')} pairs per cohort (beyond the calibration)"
        )
        parts.append(
            f"{s['metric']} on {s['treatment']} vs {s['control']} (towards {s['towards']}, "
            f"{s['cohorts']} cohorts): {pairs}"
        )
    return (
        " SKEWED beyond the decision interval's calibration at these pairs, so insufficient "
        "(reason skewed) until: " + "; ".join(parts) + "."
    )


def render_cohort_table(analysis: CohortAnalysis, metrics: tuple[str, ...] | None = None) -> str:
    """A markdown table: one row per cohort x contrast x metric (insufficient: one row)."""
    shown = metrics or METRICS
    data = analysis.to_json()
    lines = [
        f"Cohort analysis (run {analysis.run_id}; gate {analysis.min_pairs} pairs; "
        f"effect = treatment - control, negative = fewer)",
        "",
        rule_text(data),
        "",
        "| cohort | status | pairs | contrast | metric | role | effect | 95% CI | decision CI | n "
        "| nulls | decision |",
        "| --- | --- | ---: | --- | --- | --- | ---: | --- | --- | ---: | ---: | --- |",
    ]
    for cohort in data["cohorts"]:
        k = cohort["key"]
        label = (
            f"{k['client']} {k['clientVersion']} / {k['model']} {k['modelVersion']} / "
            f"{k['taskId']} / {k['stratum']}"
        )
        status = cohort["status"] + (" (exploratory)" if cohort.get("exploratory") else "")
        head = f"| {label} | {status} | {cohort['pairs']} |"
        # Metrics never observed in this cohort (n = 0) stay in the JSON, not in the table.
        rows = [e for e in cohort["effects"] if e["metric"] in shown and e["n"] > 0]
        if not rows:
            verdict = "no claim" if cohort["status"] != "ok" else "no observed metric"
            lines.append(f"{head} - | - | - | - | - | - | - | - | {verdict} |")
            continue
        for e in rows:
            ci = _interval(e["ciLow"], e["ciHigh"])
            dci = _interval(e["decisionLow"], e["decisionHigh"])
            lines.append(
                f"{head} {e['treatment']} vs {e['control']} | {e['metric']} | {e['role']} | "
                f"{_fmt(e['estimate'])} | {ci} | {dci} | {e['n']} | {e['excludedNull']} | "
                f"{decision_text(e)} |"
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
