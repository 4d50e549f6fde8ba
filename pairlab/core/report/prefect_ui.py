"""What a finished run shows in the Prefect UI, built from its ``report.json`` alone.

* :func:`headline_markdown`: the report's headline (the same words as report.md's
  "Answer" section), an exploratory banner when the gate is below the plan's
  minimum pairs, and where the stored report, plots and manifest are;
* :func:`cohort_tables`: one narrow table per primary metric (it fits a 1440 px
  screen) — a row per task cohort and contrast with the effect, its 95% interval,
  the decision of report.json as a label (:func:`decision_label`) and, when an
  interval excluded zero but the effect is not a win, why (gate, correctness,
  adjusted threshold).

Pure text; the flow task that publishes them lives in ``tasks/report.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pairlab.core.analysis.decisions import DECISION_WORDS
from pairlab.core.report.headline import COST_METRIC, QUESTIONS
from pairlab.core.report.words import (
    cohort_title,
    digits,
    group_title,
    headline_table,
    interval,
    number,
    short_reason,
    summary_sentence,
)

# Files of a published run the UI links to, in the order shown.
LINKED_FILES: Final = (
    ("report (HTML)", "report.html"),
    ("report (markdown)", "report.md"),
    ("report.json", "report.json"),
    ("forest plot", "forest.png"),
    ("manifest.json", "manifest.json"),
)


def exploratory_note(report: Mapping[str, Any]) -> str | None:
    """The exploratory label of a run (None when the gate meets the plan's minimum)."""
    meta = report.get("meta", {})
    if not meta.get("exploratory"):
        return None
    plan_min = (meta.get("study_plan") or {}).get("min_pairs")
    return (
        f"EXPLORATORY: gate {meta.get('min_pairs')} pairs is below the study plan's "
        f"minimum of {plan_min}; effects with fewer pairs are not wins"
    )


def _link(location: str) -> str:
    if location.startswith(("s3://", "http://", "https://")):
        return f"[`{location}`]({location})"
    return f"`{location}`"


DECISION_LABELS: Final = {name: words.label for name, words in DECISION_WORDS.items()}


def decision_label(effect: Mapping[str, Any], plan_min_pairs: int | None = None) -> str:
    """report.json's decision of an effect in words, ``(exploratory)`` when a gate below
    the plan's minimum let it be tested with fewer pairs than the plan (never a win)."""
    decision = str(effect.get("decision"))
    label = DECISION_LABELS.get(decision, decision)
    n = effect.get("n")
    below_plan = plan_min_pairs is not None and isinstance(n, int) and n < plan_min_pairs
    words = DECISION_WORDS.get(decision)
    computed = words.computed if words else True
    return f"{label} (exploratory)" if below_plan and computed else label


def why_not(effect: Mapping[str, Any]) -> str:
    """Why an effect is not a win (empty for a win or when there is nothing to say)."""
    return short_reason(effect)


def _compact_cell(question: str, cell: Mapping[str, Any], labels: Mapping[str, Any]) -> str:
    words = labels.get(question, {})
    parts = [
        f"{cell.get(k)} {words.get(k, k)}"
        for k in ("win", "regression", "noEvidence")
        if cell.get(k)
    ]
    if cell.get("insufficient"):
        parts.append(f"{cell['insufficient']} insufficient")
    return " · ".join(parts) or "—"


def headline_lines(headline: Mapping[str, Any]) -> list[str]:
    """The headline of report.json in a screen's width: per client/model a sentence per
    contrast, a table of non-zero counts, and the reasons behind "no evidence"."""
    lines = []
    if headline.get("exploratory"):
        lines += [
            f"> **Exploratory analysis**: the gate ({headline.get('gate')} pairs) is below the "
            "pre-registered minimum; effects with fewer pairs than the plan are not wins.",
            "",
        ]
    labels = headline.get("labels", {})
    for group in headline.get("groups", []):
        lines += [f"### {group_title(group)} — {group.get('cohorts')} task cohorts", ""]
        rows = group.get("contrasts", [])
        lines += [f"- {summary_sentence(row)}" for row in rows]
        metric = rows[0].get("tokens", {}).get("metric", "totalTokens") if rows else ""
        titles = {
            "tokens": f"tokens ({metric})",
            "cost": f"list price ({COST_METRIC})",
            "subscription": "subscription quota",
            "correctness": "correctness",
        }
        lines.append("")
        lines += headline_table(
            rows,
            QUESTIONS,
            titles,
            lambda q, cell: _compact_cell(q, cell, labels),
            "Why no evidence (task cohorts per reason)",
        )
    return lines


def headline_markdown(report: Mapping[str, Any], locations: Mapping[str, str]) -> str:
    """The headline artifact: run line, exploratory banner, the answer, links."""
    meta = report.get("meta", {})
    # the headline's own banner says why; the title says it before anything else
    title = f"# {'EXPLORATORY — ' if meta.get('exploratory') else ''}run `{meta.get('run_id')}`"
    lines = [
        title,
        "",
        f"suite `{meta.get('suite')}` · profile `{meta.get('profile')}` · "
        f"{meta.get('episodes')} episodes ({meta.get('failed')} failed agent runs) · "
        f"gate {meta.get('min_pairs')} pairs",
        "",
    ]
    lines += headline_lines(report.get("headline", {}))
    lines += ["## Stored outputs", ""]
    for title_, name in LINKED_FILES:
        if name in locations:
            lines.append(f"- {title_}: {_link(locations[name])}")
    lines.append("")
    return "\n".join(lines)


def _group_label(key: Mapping[str, Any]) -> str:
    return f"{key.get('client')} {key.get('clientVersion')} · {key.get('model')}"


def cohort_tables(report: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per primary metric, the rows of its cohort table (task × contrast)."""
    cohorts = report.get("analysis", {}).get("cohorts", [])
    groups = {_group_label(c.get("key", {})) for c in cohorts}
    tables: dict[str, list[dict[str, Any]]] = {}
    analysis = report.get("analysis", {})
    plan_min = analysis.get("plan", {}).get("min_pairs") if analysis.get("exploratory") else None
    for cohort in cohorts:
        key = cohort.get("key", {})
        task = cohort_title(key)
        if len(groups) > 1:
            task = f"{task} · {_group_label(key)}"
        for effect in cohort.get("effects", []):
            if effect.get("role") != "primary":
                continue
            places = digits(effect.get("metric"))
            tables.setdefault(str(effect["metric"]), []).append(
                {
                    "task": task,
                    "contrast": f"{effect['treatment']} vs {effect['control']}",
                    "n": effect.get("n"),
                    "effect": number(effect.get("estimate"), places, signed=True),
                    "95% CI": interval(effect.get("ciLow"), effect.get("ciHigh"), places),
                    "decision": decision_label(effect, plan_min),
                    "why not a win": why_not(effect),
                }
            )
    return tables


__all__ = [
    "DECISION_LABELS",
    "LINKED_FILES",
    "cohort_tables",
    "decision_label",
    "exploratory_note",
    "headline_lines",
    "headline_markdown",
    "why_not",
]
