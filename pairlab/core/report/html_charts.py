"""report.html's charts: the per-metric forest plots of the paired effects (the primary
token metric and API list price shown, every other metric folded) and the subscription
quota section (consumption per arm and window, the paired effects, the verdicts).

Inline SVG from :mod:`pairlab.core.report.svg`; a pure function of the report JSON
like the rest of :mod:`pairlab.core.report.html`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any, Final

from pairlab.core.analysis.metrics import METRICS
from pairlab.core.report.headline import COST_METRIC, token_metric
from pairlab.core.report.markdown import BELOW_PRECISION_HINT
from pairlab.core.report.svg import Row, interval_chart
from pairlab.core.report.words import (
    cohort_title,
    decision_tone,
    decision_word,
    digits,
    metric_title,
    number,
    pairs_text,
)

NOTE_WORDS: Final = {  # the plots' right-hand notes are short
    "above the adjusted threshold": "adj. threshold",
    "only the 95% CI excludes 0": "95% CI only",
    "saving, correctness regressed": "correctness regressed",
    "saving, correctness not graded": "not graded",
    "below the plan's pairs": "below plan pairs",
}


def _effect_rows(
    cohorts: Sequence[Mapping[str, Any]], metric: str, contrasts: Sequence[tuple[str, str]]
) -> tuple[list[Row], list[str]]:
    rows, unseen = [], []
    places = digits(metric)
    # per cohort, its effects of this metric by contrast (the first of each, as listed)
    indexed = []
    for cohort in cohorts:
        by_contrast: dict[tuple[str, str], Mapping[str, Any]] = {}
        for e in cohort.get("effects", []):
            if e["metric"] == metric:
                by_contrast.setdefault((e["treatment"], e["control"]), e)
        indexed.append(by_contrast)
    for t, c in contrasts:
        for cohort, by_contrast in zip(cohorts, indexed, strict=True):
            found = by_contrast.get((t, c))
            if found is None:
                continue
            e = found
            title = cohort_title(cohort.get("key", {}))
            if not e.get("n"):
                if title not in unseen:
                    unseen.append(title)
                continue
            word = decision_word(e)
            rows.append(
                Row(
                    label=title,
                    value=e.get("estimate"),
                    low=e.get("ciLow"),
                    high=e.get("ciHigh"),
                    outer_low=e.get("decisionLow"),
                    outer_high=e.get("decisionHigh"),
                    tone=decision_tone(e) or ("neutral" if e.get("ciLow") is not None else "muted"),
                    note=f"{number(e.get('estimate'), places)} · {NOTE_WORDS.get(word, word) or 'no evidence'} · n {e.get('n')}",
                    group=f"{t} vs {c}",
                )
            )
    return rows, unseen


def _contrasts(cohorts: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for cohort in cohorts:
        for e in cohort.get("effects", []):
            pair = (e["treatment"], e["control"])
            if pair not in found:
                found.append(pair)
    return found


def _metric_order(analysis: Mapping[str, Any]) -> list[str]:
    """The primary token metric, API list price, then the other metrics."""
    contrasts = _contrasts(analysis.get("cohorts", []))
    plan = analysis.get("plan", {})
    label = f"{contrasts[0][0]}-vs-{contrasts[0][1]}" if contrasts else ""
    primary = token_metric(plan, label)
    return [primary, COST_METRIC, *[m for m in METRICS if m not in (primary, COST_METRIC)]]


def _forest_plot(analysis: Mapping[str, Any], metric: str) -> tuple[str, bool]:
    """One metric's forest plot (and whether any cohort observed it)."""
    cohorts = analysis.get("cohorts", [])
    rows, unseen = _effect_rows(cohorts, metric, _contrasts(cohorts))
    if not rows:
        return "", False
    parts = [interval_chart(rows, axis_label=f"{metric} (treatment − control)", title=metric)]
    if unseen:
        parts.append(
            f'<p class="note">Not observed (null in every pair): {escape(", ".join(unseen))}.</p>'
        )
    return "".join(parts), True


LEGEND: Final = (
    '<p class="note">Treatment − control per pair, per task cohort. Dot: estimate; thick '
    "bar: 95% percentile interval; thin line: the decision interval, which decides (an open "
    "end runs off the axis). Green: win; red: regression; grey: no evidence; light: too few "
    "pairs.</p>"
)


def forest_section(analysis: Mapping[str, Any]) -> list[str]:
    """The primary token metric and API list price, shown; every metric is in ``_more``."""
    out = ['<section id="effects"><h2>Tokens and API list price</h2>', LEGEND]
    for metric in _metric_order(analysis)[:2]:
        plot, seen = _forest_plot(analysis, metric)
        out.append(f"<h3>{escape(metric_title(metric))} <code>{escape(metric)}</code></h3>")
        out.append(plot if seen else '<p class="note">Not observed in any cohort.</p>')
    if not any(c.get("effects") for c in analysis.get("cohorts", [])):
        out.append('<p class="note">No cohort passed the gate: no intervals to plot.</p>')
    out.append("</section>")
    return out


def more_section(analysis: Mapping[str, Any]) -> list[str]:
    out = ['<section id="metrics"><h2>Every other metric</h2>', LEGEND]
    never = []
    for metric in _metric_order(analysis)[2:]:
        plot, seen = _forest_plot(analysis, metric)
        if not seen:
            never.append(metric)
            continue
        out.append(
            f"<details><summary>{escape(metric_title(metric))} <code>{escape(metric)}</code>"
            f"</summary>{plot}</details>"
        )
    if never:
        out.append(
            f'<p class="note">No pair observed in any cohort (null in every episode): '
            f"{escape(', '.join(never))}.</p>"
        )
    out.append("</section>")
    return out


def quota_section(subscription: Mapping[str, Any] | None) -> list[str]:
    if subscription is None:
        return []
    unit = str(subscription.get("unit", "episode"))
    cohorts = subscription.get("cohorts", [])
    out = ['<section id="quota"><h2>Subscription quota</h2>']
    out.append(f'<p class="note">{escape(str(subscription.get("rule", "")))}</p>')
    verdicts = [v for c in cohorts for v in c.get("verdicts", [])]
    if verdicts and all(v.get("verdict") == "inconclusive" for v in verdicts):
        out.append(f'<p class="warn">{escape(BELOW_PRECISION_HINT)}</p>')
    for window in subscription.get("windows", []):
        name = window["window"]
        rows = []
        for cohort in cohorts:
            for arm in cohort.get("arms", []):
                if arm.get("window") != name:
                    continue
                rows.append(
                    Row(
                        label=str(arm.get("arm")),
                        value=arm.get("meanConsumptionPct"),
                        low=arm.get("minConsumptionPct"),
                        high=arm.get("maxConsumptionPct"),
                        tone="arm" if arm.get("usable") else "muted",
                        note=(
                            f"{number(arm.get('meanConsumptionPct'), 1)} pts · "
                            f"{arm.get('usable')}/{arm.get('units')}"
                            + (" · < precision" if arm.get("belowPrecision") else "")
                        ),
                        group=cohort_title(cohort.get("key", {})),
                    )
                )
        out.append(f"<h3>{escape(name)} window: consumption per {escape(unit)} and arm</h3>")
        out.append(
            interval_chart(
                rows,
                axis_label=f"percentage points of the {name} window per {unit} (dot: mean; bar: min–max)",
                reference=0.0,
                title=f"{name} consumption",
            )
        )
    for window in subscription.get("windows", []):
        plot, seen = _forest_plot(subscription, window["metric"])
        if seen:
            out.append(
                f"<h3>{escape(window['window'])} window: paired effect per {escape(unit)} "
                f"(treatment − control, points)</h3>{plot}"
            )
    out.append("<h3>Verdict per cohort and contrast</h3>")
    contrasts: list[tuple[str, str]] = []
    for v in verdicts:
        if (v["treatment"], v["control"]) not in contrasts:
            contrasts.append((v["treatment"], v["control"]))
    out.append("<table><tr><th>cohort</th>")
    out += [f"<th>{escape(t)} vs {escape(c)}</th>" for t, c in contrasts]
    out.append("</tr>")
    for cohort in cohorts:
        by = {(v["treatment"], v["control"]): v for v in cohort.get("verdicts", [])}
        out.append(f"<tr><th>{escape(cohort_title(cohort.get('key', {})))}</th>")
        for pair in contrasts:
            v = by.get(pair)
            if v is None:
                out.append("<td>—</td>")
                continue
            verdict = str(v.get("verdict"))
            css = {"supported-candidate": "supported", "rejected": "rejected"}.get(
                verdict, "inconclusive"
            )
            reasons = ", ".join(f"{r} ×{n}" for r, n in list(v.get("reasons", {}).items())[:3])
            if v.get("belowPrecision") and verdict == "inconclusive":
                reasons = "below precision" + (f"; {reasons}" if reasons else "")
            shown = {"supported": "supported", "rejected": "rejected"}.get(css, "inconclusive")
            detail = f"{pairs_text(v)}{'; ' + reasons if reasons else ''}"
            out.append(
                f'<td><span class="v-{css}">{shown}</span>'
                f'<div class="note">{escape(detail)}</div></td>'
            )
        out.append("</tr>")
    out.append("</table></section>")
    return out
