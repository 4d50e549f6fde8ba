"""The evaluation report (markdown + JSON) built from a cohort analysis.

Works on the JSON form of the analysis (the ``pairlab aggregate --json`` shape),
so it renders reports from any producer's episode log the same way. Nulls are
shown as ``—`` (never 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pairlab.core.cohort_report import KEY_COLUMNS

CLAIM_NOTE = (
    "Effects are treatment − control per pair (negative = fewer). Only paired eval-run "
    "records produce intervals; cohorts are never pooled; a saving is a win only when the "
    "gate holds, the 95% interval excludes zero and correctness did not regress. Token "
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
    wins = [(c, e) for c in cohorts for e in c.get("effects", []) if e.get("win")]
    lines += ["## Summary", ""]
    lines.append(
        f"{len(cohorts)} cohorts; {sum(1 for c in cohorts if c.get('status') == 'ok')} pass the gate; {len(wins)} winning effects."
    )
    lines.append("")
    for cohort in cohorts:
        lines += [f"## Cohort: {_cohort_title(cohort.get('key', {}))}", ""]
        lines.append(f"status: **{cohort.get('status')}** · complete pairs: {cohort.get('pairs')}")
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
                "| treatment vs control | metric | estimate | 95% CI | n | excl. null | win |",
                "|---|---|---|---|---|---|---|",
            ]
            for e in effects:
                d = _metric_digits(e.get("metric"))
                lines.append(
                    f"| {e.get('treatment')} vs {e.get('control')} | {e.get('metric')} | {_fmt(e.get('estimate'), d)} | "
                    f"[{_fmt(e.get('ciLow'), d)}, {_fmt(e.get('ciHigh'), d)}] | {e.get('n')} | {e.get('excludedNull')} | "
                    f"{'**win**' if e.get('win') else ''} |"
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
