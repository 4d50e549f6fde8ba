"""What a finished run shows in the Prefect UI, built from its ``report.json`` alone.

* :func:`headline_markdown`: the report's headline (the same words as report.md's
  "Answer" section), an exploratory banner when the gate is below the plan's
  minimum pairs, and where the stored report, plots and manifest are;
* :func:`cohort_tables`: one narrow table per primary metric — a row per task
  cohort and contrast with the effect, its 95% interval and the decision label of
  report.json (:func:`pairlab.core.cohort_table.decision_text`), which names the
  reason when an interval excluded zero but the effect is not a win.

Pure text; the flow task that publishes them lives in ``tasks/report.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pairlab.core.cohort_table import decision_text
from pairlab.core.report import render_headline_markdown
from pairlab.core.report_text import cohort_title, digits, interval, number

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
    lines += render_headline_markdown(report.get("headline", {}))
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
                    "pairs": effect.get("n"),
                    "effect": number(effect.get("estimate"), places, signed=True),
                    "95% CI": interval(effect.get("ciLow"), effect.get("ciHigh"), places),
                    "decision": decision_text(effect),
                }
            )
    return tables


__all__ = ["LINKED_FILES", "cohort_tables", "exploratory_note", "headline_markdown"]
