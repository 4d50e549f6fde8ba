"""The self-contained HTML report (``report.html``) beside report.md.

One file, no external request: inline CSS, inline SVG charts
(:mod:`pairlab.core.report.svg`), no scripts, fonts or images to fetch. A pure
function of the report JSON (:func:`pairlab.core.report.markdown.build_report_json`), so
``pairlab report`` reproduces it byte for byte. Sections: the answer (headline
counts per client/version/model and contrast), per-metric forest plots (the
primary metric first; cohorts that never observed a metric collapse into one
line), subscription quota per arm and window with the verdicts, correctness per
arm with Wilson intervals, join coverage, the per-cohort tables, the method.

Many cohorts (issue 28: 10,000 cohorts made an ~80 MB page). Up to
:data:`FULL_COHORTS` cohorts, every cohort is drawn in every section. Beyond it the
answer still counts every cohort, but the per-cohort charts and tables draw
:data:`FULL_COHORTS` of them - every cohort with a regression first, then those with a
win, then the rest, each in the analysis's order - and a one-line table lists every
cohort (pairs, status, its effects' wins and regressions). Each section says how many it
shows, and the page links the complete per-cohort tables beside it (``report.md``) and
every effect (``effects.parquet``): relative links to the run's own files, nothing
fetched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any, Final

from pairlab.core.analysis.metrics import KEY_COLUMNS
from pairlab.core.analysis.table import rule_text
from pairlab.core.budget import budget_fact
from pairlab.core.provider_limit import provider_limit_fact
from pairlab.core.report.headline import LABELS, QUESTIONS
from pairlab.core.report.html_charts import forest_section, more_section, quota_section
from pairlab.core.report.intervention_answer import answer_lines
from pairlab.core.report.markdown import CLAIM_NOTE, render_cohort_markdown
from pairlab.core.report.svg import Row, interval_chart
from pairlab.core.report.words import (
    QUESTION_TITLES,
    account_fact,
    cohort_title,
    decision_tone,
    group_title,
    intervention_fact,
    intervention_health_fact,
    number,
    reason_text,
    scripted_model_fact,
    summary_sentence,
)

FULL_COHORTS: Final = 100  # beyond this, per-cohort sections draw the notable cohorts
FULL_TABLES: Final = ("report.md", "effects.parquet")  # beside report.html in a run

STYLE: Final = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;
margin:0;background:#f6f8fa}
main{max-width:1120px;margin:0 auto;padding:20px 28px 48px;background:#fff}
h1{font-size:22px;margin:4px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;
padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}
.meta{color:#57606a;margin:2px 0 10px}.note{color:#57606a;font-size:13px;margin:6px 0}
.warn{background:#fff8c5;border:1px solid #d4a72c;padding:6px 10px;border-radius:6px}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
table.answer td{min-width:170px}.bar{display:flex;height:12px;border-radius:3px;overflow:hidden;
margin:2px 0 4px;background:#eaeef2}.bar span{display:block;height:100%}
.win{background:#1a7f37}.regression{background:#cf222e}.noEvidence{background:#8c959f}
.insufficient{background:#d0d7de}.counts b.w{color:#1a7f37}.counts b.r{color:#cf222e}
.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px;border-radius:2px}
svg.chart{display:block;margin:4px 0 8px;font:12px system-ui,sans-serif;fill:#1f2328}
svg .g{font-weight:600}svg .grid{stroke:#eaeef2}svg .ref{stroke:#1f2328;stroke-dasharray:4 3}
svg .tick{fill:#57606a;font-size:11px}svg .note{font-size:11px}svg .axis{fill:#57606a}
.v-supported{color:#1a7f37;font-weight:600}.v-rejected{color:#cf222e;font-weight:600}
.v-inconclusive{color:#57606a}ul.summary{margin:4px 0 8px;padding-left:20px}
details{margin:6px 0}summary{cursor:pointer;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
"""


def _key(key: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(key.get(k)) for k in KEY_COLUMNS)


def _counts_cell(question: str, cell: Mapping[str, Any]) -> str:
    total = sum(int(cell.get(k, 0)) for k in ("win", "regression", "noEvidence", "insufficient"))
    spans = "".join(
        f'<span class="{k}" style="width:{100 * int(cell.get(k, 0)) / total:.2f}%"></span>'
        for k in ("win", "regression", "noEvidence", "insufficient")
        if total and cell.get(k)
    )
    words = LABELS[question]
    text = (
        f'<b class="w">{cell.get("win", 0)}</b> {escape(words["win"])} · '
        f'<b class="r">{cell.get("regression", 0)}</b> {escape(words["regression"])} · '
        f"{cell.get('noEvidence', 0)} {escape(words['noEvidence'])}"
    )
    if cell.get("insufficient"):
        text += f" · {cell['insufficient']} insufficient"
    return f'<div class="bar">{spans}</div><div class="counts">{text}</div>'


def _answer(headline: Mapping[str, Any]) -> list[str]:
    out = ['<section id="answer"><h2>Answer</h2>']
    out.append(
        '<p class="note">Counts of <b>task cohorts</b>, each analysed on its own (never a '
        "pooled effect). Tokens and API list price: the plan's decision rule; subscription "
        "quota: the canary's quota rule on paired quota intervals; correctness: McNemar's "
        f"exact test at alpha {escape(str(headline.get('alpha')))}.</p>"
    )
    out.append(
        '<p class="legend note"><span class="win"></span>win / supported / better'
        '<span class="regression"></span>regression / rejected / worse'
        '<span class="noEvidence"></span>no evidence<span class="insufficient"></span>'
        "insufficient</p>"
    )
    if headline.get("exploratory"):
        out.append(
            f'<p class="warn">Exploratory analysis: the gate ({headline.get("gate")} pairs) is below '
            "the pre-registered minimum; effects with fewer pairs than the plan are not wins.</p>"
        )
    for group in headline.get("groups", []):
        out.append(f"<h3>{escape(group_title(group))} — {group.get('cohorts')} task cohorts</h3>")
        rows = group.get("contrasts", [])
        metric = rows[0]["tokens"].get("metric", "totalTokens") if rows else "totalTokens"
        titles = {
            "tokens": f"Tokens ({metric})",
            "cost": "API list price",
            "subscription": "Subscription quota",
            "correctness": "Correctness",
        }
        out.append(
            '<ul class="summary">'
            + "".join(f"<li>{escape(summary_sentence(row))}</li>" for row in rows)
            + "</ul>"
        )
        out.append('<table class="answer"><tr><th>contrast</th>')
        out += [f"<th>{escape(titles[q])}</th>" for q in QUESTIONS]
        out.append("</tr>")
        notes = []
        for row in rows:
            name = f"{row['treatment']} vs {row['control']}"
            out.append(f"<tr><th>{escape(name)}</th>")
            out += [f"<td>{_counts_cell(q, row[q])}</td>" for q in QUESTIONS]
            out.append("</tr>")
            for q in QUESTIONS:
                reasons = list(row[q].get("reasons", {}).items())[:3]
                if reasons and (row[q].get("noEvidence") or row[q].get("insufficient")):
                    why = ", ".join(f"{reason_text(r)} ({n})" for r, n in reasons)
                    notes.append(f"{name}, {QUESTION_TITLES[q]}: {why}")
        out.append("</table>")
        if notes:
            out.append("<details><summary>Why no evidence (cohorts per reason)</summary><ul>")
            out += [f"<li>{escape(n)}</li>" for n in notes]
            out.append("</ul></details>")
    out.append("</section>")
    return out


def _correctness_section(analysis: Mapping[str, Any]) -> list[str]:
    rows = []
    for cohort in analysis.get("cohorts", []):
        correctness = cohort.get("correctness", {})
        for arm, c in correctness.items():
            if arm == "paired":
                continue
            rows.append(
                Row(
                    label=arm,
                    value=c.get("rate"),
                    low=c.get("wilsonLow"),
                    high=c.get("wilsonHigh"),
                    tone="arm" if c.get("n") else "muted",
                    note=f"{c.get('correct')}/{c.get('n')} correct",
                    group=cohort_title(cohort.get("key", {})),
                )
            )
    out = ['<section id="correctness"><h2>Correctness per arm</h2>']
    out.append(
        '<p class="note">Share of graded episodes correct, with its Wilson 95% interval. '
        "Paired differences and McNemar's test are in the cohort tables below.</p>"
    )
    out.append(
        interval_chart(
            rows,
            axis_label="correct rate (Wilson 95%)",
            reference=None,
            domain=(0.0, 1.0),
            title="correctness",
        )
    )
    out.append("</section>")
    return out


def _coverage_section(analysis: Mapping[str, Any]) -> list[str]:
    out = ['<section id="coverage"><h2>Join coverage</h2>']
    out.append(
        '<p class="note">How each episode\'s usage was joined to its run: exact (session id), '
        "fallback (time window), missing.</p><table><tr><th>cohort</th><th>exact</th>"
        "<th>fallback</th><th>missing</th><th></th></tr>"
    )
    for cohort in analysis.get("cohorts", []):
        cov = cohort.get("joinCoverage", {})
        total = sum(int(v) for v in cov.values()) or 1
        bar = "".join(
            f'<span class="{css}" style="width:{100 * int(cov.get(k, 0)) / total:.2f}%"></span>'
            for k, css in (("exact", "win"), ("fallback", "noEvidence"), ("missing", "regression"))
            if cov.get(k)
        )
        out.append(
            f"<tr><th>{escape(cohort_title(cohort.get('key', {})))}</th>"
            + "".join(
                f'<td class="num">{int(cov.get(k, 0))}</td>'
                for k in ("exact", "fallback", "missing")
            )
            + f'<td style="width:220px"><div class="bar">{bar}</div></td></tr>'
        )
    out.append("</table></section>")
    return out


def _markdown_table_html(lines: Sequence[str]) -> str:
    """The cohort's markdown lines as HTML (tables and paragraphs; ** as bold)."""
    html: list[str] = []
    table: list[list[str]] = []

    def inline(text: str) -> str:
        parts = escape(text).split("**")
        return "".join(f"<b>{p}</b>" if i % 2 else p for i, p in enumerate(parts))

    def flush() -> None:
        if not table:
            return
        head, *body = table
        html.append("<table><tr>" + "".join(f"<th>{inline(c)}</th>" for c in head) + "</tr>")
        for row in body:
            html.append("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in row) + "</tr>")
        html.append("</table>")
        table.clear()

    for line in lines:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= {"-"} for c in cells):
                table.append(cells)
            continue
        flush()
        if line.startswith("### "):
            continue
        if line.strip():
            html.append(f'<p class="note">{inline(line)}</p>')
    flush()
    return "".join(html)


def _cohorts_section(
    analysis: Mapping[str, Any], subscription: Mapping[str, Any] | None
) -> list[str]:
    quota = {_key(c["key"]): c for c in (subscription or {}).get("cohorts", [])}
    unit = str((subscription or {}).get("unit", "episode"))
    plan = analysis.get("plan", {})
    out = ['<section id="cohorts"><h2>Cohorts</h2>']
    for cohort in analysis.get("cohorts", []):
        key = cohort.get("key", {})
        lines = render_cohort_markdown(cohort, quota.get(_key(key)), plan, unit)
        summary = (
            f"{cohort_title(key)} — {key.get('client')} {key.get('clientVersion')} · "
            f"{key.get('model')} · {cohort.get('pairs')} pairs · {cohort.get('status')}"
        )
        out.append(f"<details><summary>{escape(summary)}</summary>")
        out.append(_markdown_table_html(lines))
        out.append("</details>")
    out.append("</section>")
    return out


def _cohort_tones(cohort: Mapping[str, Any]) -> tuple[int, int]:
    """(wins, regressions) among a cohort's effects."""
    tones = [decision_tone(e) for e in cohort.get("effects", [])]
    return tones.count("win"), tones.count("regression")


def shown_cohorts(cohorts: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The cohorts drawn in full: all up to :data:`FULL_COHORTS`; beyond, regressions first,
    then wins, then the rest (each in the analysis's order), :data:`FULL_COHORTS` in all."""
    if len(cohorts) <= FULL_COHORTS:
        return list(cohorts)
    tones = [_cohort_tones(c) for c in cohorts]
    order = sorted(range(len(cohorts)), key=lambda i: (tones[i][1] == 0, tones[i][0] == 0, i))
    return [cohorts[i] for i in sorted(order[:FULL_COHORTS])]


def _summarised_note(shown: int, total: int) -> str:
    links = " and ".join(f'<a href="{name}">{name}</a>' for name in FULL_TABLES)
    return (
        f'<p class="warn">{total} cohorts: the charts and tables below draw {shown} of them '
        "(every cohort with a regression, then those with a win, then the rest); every "
        f"cohort is counted in the answer, listed in one line each below, and in full in "
        f"{links} beside this page.</p>"
    )


def _every_cohort_section(cohorts: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per cohort: its pairs, status and its effects' wins and regressions."""
    out = [
        '<section id="every-cohort"><h2>Every cohort</h2><details><summary>'
        f"{len(cohorts)} cohorts, one line each</summary><table><tr><th>cohort</th>"
        "<th>client</th><th>model</th><th>pairs</th><th>status</th><th>wins</th>"
        "<th>regressions</th></tr>"
    ]
    for cohort in cohorts:
        key = cohort.get("key", {})
        wins, regressions = _cohort_tones(cohort)
        client = f"{key.get('client')} {key.get('clientVersion')}"
        out.append(
            f"<tr><td>{escape(cohort_title(key))}</td><td>{escape(client)}</td>"
            f"<td>{escape(str(key.get('model')))}</td><td class=num>{cohort.get('pairs')}</td>"
            f"<td>{escape(str(cohort.get('status')))}</td><td class=num>{wins}</td>"
            f"<td class=num>{regressions}</td></tr>"
        )
    out.append("</table></details></section>")
    return out


def _intervention_answer(answer: Mapping[str, Any] | None) -> list[str]:
    """The run's intervention's answer (``interventionAnswer``), the markdown's lines."""
    lines = answer_lines(answer)
    if not lines:
        return []
    items = "".join(f"<li>{escape(line).replace('**', '')}</li>" for line in lines)
    return [
        f'<section id="intervention-answer"><h2>The intervention\'s answer</h2><ul>{items}</ul></section>'
    ]


def render_report_html(report: Mapping[str, Any]) -> str:
    """``report.html`` from the report JSON (``report.json``'s content)."""
    meta = report.get("meta", {})
    analysis = report.get("analysis", {})
    subscription = report.get("subscription")
    headline = report.get("headline", {})
    plan = analysis.get("plan", {})
    title = f"pairlab evidence report — run {meta.get('run_id')}"
    every = analysis.get("cohorts", [])
    shown = shown_cohorts(every)
    drawn = analysis if len(shown) == len(every) else {**analysis, "cohorts": shown}
    summarised = [] if drawn is analysis else [_summarised_note(len(shown), len(every))]
    facts = (
        f"suite {meta.get('suite')} · profile {meta.get('profile')} · backend "
        f"{meta.get('backend')} · arms {', '.join(meta.get('arms', []))} · "
        f"{meta.get('repetitions')} repetitions · seed {meta.get('seed')} · "
        f"{meta.get('episodes')} episodes ({meta.get('failed')} failed agent runs, "
        f"{meta.get('excluded')} excluded) · gate {meta.get('min_pairs')} pairs · price catalog "
        f"{number(meta.get('price_catalog_version'))}"
        + (f" · study plan {plan.get('id')} ({str(plan.get('sha256', ''))[:12]})" if plan else "")
        + intervention_fact(meta.get("intervention"))
        + intervention_health_fact(meta.get("intervention_health"))
        + scripted_model_fact(meta.get("scripted_model"))
        + account_fact(meta.get("account"))
        + budget_fact(meta.get("budget"))
        + provider_limit_fact(meta.get("provider_limited"))
    )
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body><main>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">{escape(facts)}</p>',
        *_answer(headline),
        *_intervention_answer(report.get("interventionAnswer")),
        *summarised,
        *forest_section(drawn),
        *quota_section(subscription),
        *_correctness_section(drawn),
        *more_section(drawn),
        *_coverage_section(drawn),
        *_cohorts_section(drawn, subscription),
        *([] if drawn is analysis else _every_cohort_section(every)),
        '<section id="method"><h2>Method</h2>',
    ]
    if "decisionRule" in analysis:
        parts.append(f'<p class="note">{escape(rule_text(dict(analysis)))}</p>')
    parts.append(f'<p class="note">{escape(CLAIM_NOTE.replace("**", ""))}</p>')
    parts.append("</section></main></body></html>\n")
    return "\n".join(parts)


__all__ = ["FULL_COHORTS", "render_report_html", "shown_cohorts"]
