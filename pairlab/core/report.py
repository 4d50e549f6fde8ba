"""The evaluation report (markdown + JSON) built from a cohort analysis.

Works on the JSON form of the analysis (the ``pairlab aggregate --json`` shape),
so it renders reports from any producer's episode log the same way. Nulls are
shown as ``—`` (never 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pairlab.core.cohort_report import KEY_COLUMNS
from pairlab.core.cohort_table import decision_text, rule_text

CLAIM_NOTE = (
    "Effects are treatment − control per pair (negative = fewer). Only paired eval-run "
    "records produce intervals; cohorts are never pooled. A saving is a **primary win** when "
    "the pre-registered primary test's decision interval excludes zero after Holm across the "
    "primary contrasts, a **secondary win (adjusted)** when a secondary metric passes its "
    "multiplicity-adjusted threshold, and in both cases only with the pre-registered minimum "
    "pairs and correctness that did not regress; everything else is no evidence. The 95% "
    "percentile interval is reported, the decision interval decides. Token "
    "counts are provider-native usage; certification checks are never counted as evidence. "
    "apiListPriceUsd is the API list-price equivalent of that usage (at the price catalog "
    "named above; null where a model or dimension is not priced); costUsd is a charge the "
    "provider itself reported, null where none did."
)


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def _metric_digits(metric: Any) -> int:
    """Decimals for a metric's values: dollars per episode need more than token counts."""
    return 6 if isinstance(metric, str) and metric.endswith("Usd") else 1


def _cohort_title(key: Mapping[str, Any]) -> str:
    parts = [f"{k}={_fmt(key.get(k))}" for k in KEY_COLUMNS]
    return ", ".join(parts)


def _p(value: Any) -> str:
    return "—" if value is None else f"{value:.3g}"


def _bounds(low: Any, high: Any, digits: int) -> str:
    if low is None and high is None:
        return "—"
    lo = "−∞" if low is None else _fmt(low, digits)
    hi = "+∞" if high is None else _fmt(high, digits)
    return f"[{lo}, {hi}]"


def _summary(cohorts: Sequence[Mapping[str, Any]]) -> list[str]:
    """Counts of cohorts and of effects by decision; the wins listed by kind."""
    ok = sum(1 for c in cohorts if c.get("status") == "ok")
    effects = [(c, e) for c in cohorts for e in c.get("effects", [])]
    primary = [(c, e) for c, e in effects if e.get("decision") == "primary-win"]
    secondary = [(c, e) for c, e in effects if e.get("decision") == "secondary-win"]
    regressions = [(c, e) for c, e in effects if e.get("decision") == "regression"]
    tested_primary = [(c, e) for c, e in effects if e.get("role") == "primary"]
    lines = ["## Summary", ""]
    lines.append(
        f"{len(cohorts)} cohorts; {ok} pass the gate. Primary tests: {len(tested_primary)}, of "
        f"which **{len(primary)} primary wins**; **{len(secondary)} secondary wins** "
        f"(multiplicity-adjusted); **{len(regressions)} regressions**; every other effect is no "
        "evidence, insufficient or not tested."
    )
    lines.append("")
    for title, rows in (
        ("Primary wins", primary),
        ("Secondary wins (adjusted)", secondary),
        ("Regressions", regressions),
    ):
        if not rows:
            continue
        lines += [f"**{title}**:", ""]
        for c, e in rows:
            key = c.get("key", {})
            d = _metric_digits(e.get("metric"))
            lines.append(
                f"- {key.get('taskId')} ({key.get('client')} {key.get('clientVersion')}, "
                f"{key.get('model')}): {e.get('treatment')} vs {e.get('control')}, "
                f"{e.get('metric')} {_fmt(e.get('estimate'), d)} "
                f"{_bounds(e.get('decisionLow'), e.get('decisionHigh'), d)}, adjusted p {_p(e.get('pAdjusted'))}"
            )
        lines.append("")
    return lines


def render_report_markdown(meta: Mapping[str, Any], analysis: Mapping[str, Any]) -> str:
    lines = [f"# pairlab evidence report — run `{meta.get('run_id')}`", ""]
    lines += [
        f"- suite: `{meta.get('suite')}` · profile: `{meta.get('profile')}` · backend: `{meta.get('backend')}`",
        f"- arms: {', '.join(meta.get('arms', []))} · repetitions: {meta.get('repetitions')} · seed: {meta.get('seed')}",
        f"- episodes: {meta.get('episodes')} (failed agent runs: {meta.get('failed')}, excluded: {meta.get('excluded')})",
        f"- min pairs (gate): {meta.get('min_pairs')} · price catalog: {_fmt(meta.get('price_catalog_version'))}",
        "",
        CLAIM_NOTE,
        "",
    ]
    cohorts: Sequence[Mapping[str, Any]] = analysis.get("cohorts", [])
    if "decisionRule" in analysis:
        lines += [rule_text(dict(analysis)), ""]
    if analysis.get("exploratory"):
        lines += [
            f"> **Exploratory analysis**: the gate ({analysis.get('gate')} pairs) is below the "
            f"pre-registered minimum ({analysis.get('plan', {}).get('min_pairs')}); effects with "
            "fewer pairs than the plan are not wins.",
            "",
        ]
    lines += _summary(cohorts)
    for cohort in cohorts:
        lines += [f"## Cohort: {_cohort_title(cohort.get('key', {}))}", ""]
        exploratory = (
            " · exploratory (below the pre-registered pairs)" if cohort.get("exploratory") else ""
        )
        lines.append(
            f"status: **{cohort.get('status')}** · complete pairs: {cohort.get('pairs')}{exploratory}"
        )
        lines.append("")
        corr = cohort.get("correctness", {})
        arms = [a for a in corr if a != "paired"]
        if arms:
            lines += ["| arm | correct / n | rate | Wilson 95% |", "|---|---|---|---|"]
            for arm in arms:
                c = corr[arm]
                lines.append(
                    f"| {arm} | {c.get('correct')}/{c.get('n')} | {_fmt(c.get('rate'), 3)} | "
                    f"[{_fmt(c.get('wilsonLow'), 3)}, {_fmt(c.get('wilsonHigh'), 3)}] |"
                )
            lines.append("")
        effects = cohort.get("effects", [])
        if effects:
            lines += [
                "| treatment vs control | metric | role | estimate | 95% CI (reported) | decision CI | p (adj.) | n | excl. null | decision |",
                "|---|---|---|---|---|---|---|---|---|---|",
            ]
            for e in effects:
                d = _metric_digits(e.get("metric"))
                label = decision_text(dict(e))
                if e.get("win") or e.get("decision") == "regression":
                    label = f"**{label}**"
                lines.append(
                    f"| {e.get('treatment')} vs {e.get('control')} | {e.get('metric')} | {e.get('role', '—')} | "
                    f"{_fmt(e.get('estimate'), d)} | [{_fmt(e.get('ciLow'), d)}, {_fmt(e.get('ciHigh'), d)}] | "
                    f"{_bounds(e.get('decisionLow'), e.get('decisionHigh'), d)} | {_p(e.get('pAdjusted'))} | "
                    f"{e.get('n')} | {e.get('excludedNull')} | {label} |"
                )
            lines.append("")
        elif cohort.get("status") != "ok":
            lines += ["Below the gate: no claim is made for this cohort.", ""]
        cov = cohort.get("joinCoverage")
        if cov:
            lines += [f"join coverage: {', '.join(f'{k}={_fmt(v)}' for k, v in cov.items())}", ""]
    audit = meta.get("ledger_audit")
    if isinstance(audit, Mapping):
        lines += [
            "## MCP transport ledger (local GPT-4-compatible tokenizer estimate, not an invoice)",
            "",
            f"verified net: {_fmt(audit.get('verified_net_tokens'))} · gross: {_fmt(audit.get('gross_reduction_tokens'))} · "
            f"expansion debits: {_fmt(audit.get('expansion_debit_tokens'))} · excluded rows: {_fmt(audit.get('excluded_count'))}",
            "",
        ]
    return "\n".join(lines) + "\n"


def build_report_json(meta: Mapping[str, Any], analysis: Mapping[str, Any]) -> dict[str, Any]:
    cohorts = analysis.get("cohorts", [])
    return {
        "schema_version": 1,
        "kind": "eval",
        "cohorts": len(cohorts),
        "price_catalog_version": meta.get("price_catalog_version"),
        "meta": dict(meta),
        "analysis": dict(analysis),
    }
