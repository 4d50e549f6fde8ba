"""The evaluation report as markdown and its JSON (``report.md``, ``report.json``).

Works on the JSON forms (the cohort analysis of ``pairlab aggregate --json``, the
subscription section, the headline), so it renders any producer's analysis the
same way. ``report.md`` opens with the headline — per (client, client version,
model) and contrast, counts of task cohorts with a win, a regression or no
evidence on tokens, API list price, subscription quota and correctness — then
one compact table per cohort (metrics as rows, contrasts as columns; metrics no
pair observed collapse into one line), then the method. Nulls are ``—``, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from pairlab.core.analysis.metrics import KEY_COLUMNS, METRICS
from pairlab.core.analysis.table import rule_text
from pairlab.core.budget import budget_fact
from pairlab.core.provider_limit import provider_limit_fact
from pairlab.core.report.headline import COST_METRIC, QUESTIONS, build_headline, token_metric
from pairlab.core.report.intervention_answer import (
    build_intervention_answer,
    render_answer_markdown,
)
from pairlab.core.report.words import (
    account_fact,
    cohort_title,
    decision_tone,
    decision_word,
    digits,
    group_title,
    headline_cell,
    headline_table,
    interval,
    intervention_fact,
    intervention_health_fact,
    number,
    percent,
    reason_text,
    scripted_model_fact,
    summary_sentence,
)

REPORT_SCHEMA_VERSION: Final = 2
CLAIM_NOTE: Final = (
    "Effects are treatment − control per pair (negative = fewer tokens, dollars, quota "
    "points); cohorts are never pooled. A **win** needs the plan's decision interval to "
    "exclude zero after multiplicity control (Holm across the primary contrasts; the "
    "plan's correction within the secondary metrics), the pre-registered minimum pairs and "
    "correctness that did not regress; a significant increase is a **regression**. Tables "
    "show the estimate and its 95% percentile interval; the decision interval decides "
    "(report.json has both). Token counts are provider-native usage; apiListPriceUsd is "
    "that usage at API list prices (the catalog named above, null where not priced); "
    "costUsd is a charge the provider itself reported. Certification checks never count "
    "as evidence."
)
BELOW_PRECISION_HINT: Final = (
    "Subscription windows report whole percents, and per-episode intervals differ in "
    "length: for subscription evidence run a quota-aware schedule "
    "(`--quota-interval-episodes K --quota-interval-s S`, one pair at a time), with K "
    "large enough that an arm's interval consumes several points."
)


def _cohort_key(key: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(key.get(k)) for k in KEY_COLUMNS)


def render_headline_markdown(headline: Mapping[str, Any]) -> list[str]:
    """The headline as markdown lines (one table per client/version/model)."""
    lines = ["## Answer", ""]
    lines.append(
        "Counts of **task cohorts** (each task × client × model × stratum × intervention "
        "analysed on its own; never a pooled effect). Tokens and API list price: the plan's decision rule; "
        "subscription quota: the canary's quota rule on paired quota intervals; correctness: "
        f"McNemar's exact test at alpha {headline.get('alpha')}."
    )
    lines.append("")
    if headline.get("exploratory"):
        lines += [
            f"> **Exploratory analysis**: the gate ({headline.get('gate')} pairs) is below the "
            "pre-registered minimum; effects with fewer pairs than the plan are not wins.",
            "",
        ]
    for group in headline.get("groups", []):
        lines += [f"### {group_title(group)} — {group.get('cohorts')} task cohorts", ""]
        first = group.get("contrasts", [{}])[0] if group.get("contrasts") else {}
        metric = first.get("tokens", {}).get("metric", "totalTokens")
        titles = {
            "tokens": f"Tokens ({metric})",
            "cost": f"API list price ({COST_METRIC})",
            "subscription": "Subscription quota (verdict)",
            "correctness": "Correctness (McNemar)",
        }
        lines += [f"- {summary_sentence(row)}" for row in group.get("contrasts", [])]
        lines.append("")
        lines += headline_table(
            group.get("contrasts", []),
            QUESTIONS,
            titles,
            headline_cell,
            "Why no evidence (cohorts per reason)",
        )
    return lines


def _effect_cell(effect: Mapping[str, Any] | None) -> str:
    if effect is None:
        return "—"
    places = digits(effect.get("metric"))
    text = f"{number(effect.get('estimate'), places)} {interval(effect.get('ciLow'), effect.get('ciHigh'), places)}"
    if effect.get("estimate") is None:
        text = "—"
    word = decision_word(effect)
    if decision_tone(effect):
        return f"{text} **{word}**"
    return f"{text} · {word}" if word else text


def _ordered_metrics(cohort_metrics: set[str], primary: str) -> list[str]:
    first = [m for m in (primary, COST_METRIC) if m in cohort_metrics]
    return first + [m for m in METRICS if m in cohort_metrics and m not in first]


def _quota_cell(effect: Mapping[str, Any] | None) -> str:
    if effect is None:
        return "—"
    if effect.get("n", 0) == 0:
        reasons = effect.get("excludedByReason", {})
        why = ", ".join(f"{reason_text(r)} {n}" for r, n in reasons.items())
        return f"not measured ({why})" if why else "not measured"
    cell = _effect_cell(effect)
    if effect.get("excludedNull"):
        cell += f" · {effect['excludedNull']} pairs excluded"
    return cell


def _verdict_cell(verdict: Mapping[str, Any] | None) -> str:
    if verdict is None:
        return "—"
    word = {"supported-candidate": "**supported**", "rejected": "**rejected**"}.get(
        str(verdict.get("verdict")), "inconclusive"
    )
    reasons = list(verdict.get("reasons", {}).items())[:2]
    why = ", ".join(f"{r} ×{n}" for r, n in reasons)
    if verdict.get("belowPrecision") and verdict.get("verdict") == "inconclusive":
        why = "below precision" + (f"; {why}" if why else "")
    return f"{word} ({why})" if why else word


def _correct_cell(paired: Mapping[str, Any] | None) -> str:
    if paired is None or paired.get("mcnemarP") is None:
        return "—"
    return f"{number(paired.get('diff'), 2, signed=True)} (McNemar p {paired['mcnemarP']:.3g})"


def render_cohort_markdown(
    cohort: Mapping[str, Any], quota: Mapping[str, Any] | None, plan: Mapping[str, Any], unit: str
) -> list[str]:
    """One cohort: a title line, one compact table, a few lines of context."""
    key = cohort.get("key", {})
    status = cohort.get("status")
    pairs = cohort.get("pairs")
    flags = " · exploratory" if cohort.get("exploratory") else ""
    lines = [
        f"### {cohort_title(key)} — {key.get('client')} {key.get('clientVersion')} · {key.get('model')}",
        "",
        f"{pairs} complete pairs · status **{status}**{flags}",
        "",
    ]
    correctness = cohort.get("correctness", {})
    arms = [a for a in correctness if a != "paired"]
    if arms:
        lines.append(
            "correct: "
            + " · ".join(
                f"{a} {correctness[a]['correct']}/{correctness[a]['n']} "
                f"({percent(correctness[a].get('rate'))} "
                f"[{percent(correctness[a].get('wilsonLow'))}, {percent(correctness[a].get('wilsonHigh'))}])"
                for a in arms
            )
        )
        lines.append("")
    effects = cohort.get("effects", [])
    contrasts: list[tuple[str, str]] = []
    for e in effects:
        if (e["treatment"], e["control"]) not in contrasts:
            contrasts.append((e["treatment"], e["control"]))
    quota_effects = (quota or {}).get("effects", [])
    verdicts = {(v["treatment"], v["control"]): v for v in (quota or {}).get("verdicts", [])}
    for pair in [*verdicts, *((q["treatment"], q["control"]) for q in quota_effects)]:
        if pair not in contrasts:
            contrasts.append(pair)
    if status != "ok":
        lines += [f"Below the gate: no claim on tokens, cost or correctness ({pairs} pairs).", ""]
    if not contrasts:
        return lines
    by = {(e["treatment"], e["control"], e["metric"]): e for e in [*effects, *quota_effects]}
    observed = {e["metric"] for e in effects if e.get("n", 0) > 0}
    never = [m for m in METRICS if m not in observed and any(e["metric"] == m for e in effects)]
    head = ["metric", *(f"{t} vs {c}" for t, c in contrasts)]
    lines += ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    primary = token_metric(plan, f"{contrasts[0][0]}-vs-{contrasts[0][1]}")
    for metric in _ordered_metrics(observed, primary):
        name = f"**{metric}**" if metric == primary else metric
        cells = [_effect_cell(by.get((t, c, metric))) for t, c in contrasts]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for metric, title in (
        ("quotaFiveHourConsumptionPct", f"5-hour quota, points per {unit}"),
        ("quotaSevenDayConsumptionPct", f"7-day quota, points per {unit}"),
    ):
        if any(e["metric"] == metric for e in quota_effects):
            cells = [_quota_cell(by.get((t, c, metric))) for t, c in contrasts]
            lines.append(f"| {title} | " + " | ".join(cells) + " |")
    if verdicts:
        cells = [_verdict_cell(verdicts.get(pair)) for pair in contrasts]
        lines.append("| subscription verdict | " + " | ".join(cells) + " |")
    paired = {(p["treatment"], p["control"]): p for p in correctness.get("paired", [])}
    if paired:
        cells = [_correct_cell(paired.get(pair)) for pair in contrasts]
        lines.append("| correct (paired diff) | " + " | ".join(cells) + " |")
    lines.append("")
    if never:
        lines += [f"No pair observed (null in every pair): {', '.join(never)}.", ""]
    excluded = _quota_exclusions(quota)
    if excluded:
        lines += [f"Quota {unit}s excluded (null, never 0): {excluded}.", ""]
    cov = cohort.get("joinCoverage")
    if cov:
        lines += [f"Join coverage: {', '.join(f'{k} {v}' for k, v in cov.items())}.", ""]
    if cohort.get("flags"):
        lines += [f"Flags: {'; '.join(cohort['flags'])}.", ""]
    return lines


def _quota_exclusions(quota: Mapping[str, Any] | None) -> str:
    parts = []
    for window in ("five-hour", "seven-day"):
        counts: dict[str, int] = {}
        for row in (quota or {}).get("arms", []):
            if row.get("window") != window:
                continue
            for reason, n in row.get("excludedByReason", {}).items():
                counts[reason] = counts.get(reason, 0) + n
        if counts:
            listed = ", ".join(f"{r} {n}" for r, n in sorted(counts.items()))
            parts.append(f"{window}: {listed}")
    return "; ".join(parts)


def render_report_markdown(
    meta: Mapping[str, Any],
    analysis: Mapping[str, Any],
    subscription: Mapping[str, Any] | None = None,
    headline: Mapping[str, Any] | None = None,
) -> str:
    headline = headline if headline is not None else build_headline(analysis, subscription)
    plan = analysis.get("plan", {})
    lines = [f"# pairlab evidence report — run `{meta.get('run_id')}`", ""]
    lines.append(
        f"suite `{meta.get('suite')}` · profile `{meta.get('profile')}` · backend "
        f"`{meta.get('backend')}` · arms {', '.join(meta.get('arms', []))} · "
        f"{meta.get('repetitions')} repetitions · seed {meta.get('seed')} · "
        f"{meta.get('episodes')} episodes ({meta.get('failed')} failed agent runs, "
        f"{meta.get('excluded')} excluded) · gate {meta.get('min_pairs')} pairs · price "
        f"catalog {number(meta.get('price_catalog_version'))}"
        + (f" · study plan '{plan.get('id')}' ({str(plan.get('sha256', ''))[:12]})" if plan else "")
        + intervention_fact(meta.get("intervention"))
        + intervention_health_fact(meta.get("intervention_health"))
        + scripted_model_fact(meta.get("scripted_model"))
        + account_fact(meta.get("account"))
        + budget_fact(meta.get("budget"))
        + provider_limit_fact(meta.get("provider_limited"))
    )
    lines.append("")
    lines += render_headline_markdown(headline)
    lines += render_answer_markdown(build_intervention_answer(meta, headline))
    quota_by_key = {_cohort_key(c["key"]): c for c in (subscription or {}).get("cohorts", [])}
    unit = str((subscription or {}).get("unit", "episode"))
    if subscription is not None and _needs_hint(subscription):
        lines += [f"> {BELOW_PRECISION_HINT}", ""]
    lines += ["## Cohorts", ""]
    for cohort in analysis.get("cohorts", []):
        quota = quota_by_key.get(_cohort_key(cohort.get("key", {})))
        lines += render_cohort_markdown(cohort, quota, plan, unit)
    lines += ["## Method", ""]
    if "decisionRule" in analysis:
        lines += [rule_text(dict(analysis)), ""]
    if subscription is not None:
        lines += [str(subscription.get("rule", "")), ""]
    lines += [CLAIM_NOTE, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _needs_hint(subscription: Mapping[str, Any]) -> bool:
    """No cohort's subscription verdict could be decided by its measurements."""
    verdicts: Sequence[Mapping[str, Any]] = [
        v for c in subscription.get("cohorts", []) for v in c.get("verdicts", [])
    ]
    return (
        bool(verdicts)
        and all(v.get("verdict") == "inconclusive" for v in verdicts)
        and (
            subscription.get("unit") == "episode" or all(v.get("belowPrecision") for v in verdicts)
        )
    )


def build_report_json(
    meta: Mapping[str, Any],
    analysis: Mapping[str, Any],
    subscription: Mapping[str, Any] | None = None,
    headline: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``report.json``: the headline first, then the subscription section and the analysis."""
    cohorts = analysis.get("cohorts", [])
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "kind": "eval",
        "cohorts": len(cohorts),
        "price_catalog_version": meta.get("price_catalog_version"),
        "meta": dict(meta),
        "headline": dict(headline)
        if headline is not None
        else build_headline(analysis, subscription),
        "subscription": None if subscription is None else dict(subscription),
        "analysis": dict(analysis),
        # issue 26 item 5: did the run's intervention save, beside its definition cost
        "interventionAnswer": build_intervention_answer(
            meta,
            headline if headline is not None else build_headline(analysis, subscription),
        ),
    }


__all__ = [
    "CLAIM_NOTE",
    "REPORT_SCHEMA_VERSION",
    "build_report_json",
    "render_cohort_markdown",
    "render_headline_markdown",
    "render_report_markdown",
]
