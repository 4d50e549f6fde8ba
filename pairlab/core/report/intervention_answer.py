"""The report's answer per intervention (issue 26 item 5): did *this* server -- id,
version, manifest hash -- save tokens, API list price and subscription quota on the
run's tasks, with what its tool definitions cost on every request beside it.

Two parts, both from what the run recorded:

* :func:`intervention_measures` (``report.json`` → ``meta.intervention_measures``):
  per treated arm, the tokens each model request carried of the server
  (``interventionDefinitionTokens``, the emulator's per-request measure, certify's rule)
  as median / min / max over every model request of the judged treated episodes, and
  how many of its tool calls the CLIs' transcripts show (``interventionTools.calls``; 0:
  no usage recipe ran, the run measures the floor, definitions only). None when no treated episode was measured.
* :func:`build_intervention_answer` (``report.json`` → ``interventionAnswer``): per
  contrast of the headline group of the run's intervention, one word per question from
  the headline's counts of task cohorts: ``saved`` (a win in some cohort, a regression
  in none), ``cost more`` (the reverse), ``mixed``, ``no evidence``, or
  ``insufficient`` (every cohort below the gate, unmeasured or unpriced: no claim either
  way). With fewer pairs than the gate the whole answer is exploratory, and says so:
  insufficient is not "no saving".

A scripted model measures transport and context cost, not a model's behaviour: what
its tools would make a real model do is not in this answer.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pairlab.core.report.words import reason_text
from pairlab.core.schemas.episode import EpisodeRecord

ANSWER_WORDS: Final = ("saved", "cost more", "mixed", "no evidence", "insufficient")
SCRIPTED_NOTE: Final = (
    "A scripted model measures transport and context cost (the server's definitions on "
    "every request, its tools' real payloads when a usage recipe calls them), not a "
    "model's behaviour."
)
_QUESTIONS: Final = (("tokens", "tokens"), ("cost", "API list price"), ("subscription", "quota"))


def intervention_measures(records: Sequence[EpisodeRecord]) -> dict[str, Any] | None:
    """Per treated arm: definition tokens per model request and calls of the server's
    tools, over the treated episodes whose ledger measured them. None: none did."""
    by_arm: dict[str, list[EpisodeRecord]] = {}
    for record in records:
        if record.arm != "baseline" and record.intervention_definition_tokens is not None:
            by_arm.setdefault(record.arm, []).append(record)
    if not by_arm:
        return None
    out: dict[str, Any] = {}
    for arm, measured in sorted(by_arm.items()):
        per_request = [n for r in measured for n in r.intervention_definition_tokens or []]
        calls = [
            r.intervention_tools.calls
            for r in measured
            if r.intervention_tools is not None and r.intervention_tools.calls is not None
        ]
        errors = [
            r.intervention_tools.errors
            for r in measured
            if r.intervention_tools is not None and r.intervention_tools.errors is not None
        ]
        out[arm] = {
            "episodes": len(measured),
            "requests": len(per_request),
            "definitionTokensPerRequest": {
                "median": statistics.median(per_request) if per_request else None,
                "min": min(per_request) if per_request else None,
                "max": max(per_request) if per_request else None,
            },
            "toolCalls": sum(calls) if calls else None,
            "toolErrors": sum(errors) if errors else None,
            "episodesCallingTools": sum(1 for c in calls if c) if calls else None,
        }
    return {"encoding": "cl100k", "byArm": out}


def answer_word(cell: Mapping[str, Any], cohorts: int) -> str:
    """One headline cell (counts of task cohorts) as the per-server answer's word."""
    win, regression = int(cell.get("win", 0)), int(cell.get("regression", 0))
    if win and regression:
        return "mixed"
    if win:
        return "saved"
    if regression:
        return "cost more"
    if cohorts and int(cell.get("insufficient", 0)) >= cohorts:
        return "insufficient"
    return "no evidence"


def _group_of(headline: Mapping[str, Any], stamp: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    key = f"{stamp.get('id')}@{stamp.get('version')}:{str(stamp.get('manifest_sha256'))[:12]}"
    return [g for g in headline.get("groups", []) if g.get("intervention") == key]


def build_intervention_answer(
    meta: Mapping[str, Any], headline: Mapping[str, Any]
) -> dict[str, Any] | None:
    """``report.json`` → ``interventionAnswer`` (None for a run that recorded no
    intervention)."""
    stamp = meta.get("intervention")
    if not isinstance(stamp, Mapping):
        return None
    measures = meta.get("intervention_measures") or {}
    by_arm = measures.get("byArm", {}) if isinstance(measures, Mapping) else {}
    contrasts = []
    for group in _group_of(headline, stamp):
        for row in group.get("contrasts", []):
            n = int(row.get("cohorts", 0))
            arm = by_arm.get(row.get("treatment"), {})
            contrasts.append(
                {
                    "client": group.get("client"),
                    "clientVersion": group.get("clientVersion"),
                    "treatment": row.get("treatment"),
                    "control": row.get("control"),
                    "cohorts": n,
                    **{q: answer_word(row.get(q, {}), n) for q, _ in _QUESTIONS},
                    # why a question has no answer (the headline's reasons, cohorts each)
                    "reasons": {
                        q: dict(row.get(q, {}).get("reasons") or {}) for q, _ in _QUESTIONS
                    },
                    "definitionTokensPerRequest": (arm.get("definitionTokensPerRequest") or {}).get(
                        "median"
                    ),
                }
            )
    calls = [a.get("toolCalls") for a in by_arm.values() if a.get("toolCalls") is not None]
    usage = None if not calls else ("recipe" if sum(calls) else "floor")
    return {
        "id": stamp.get("id"),
        "version": stamp.get("version"),
        "manifestSha256": stamp.get("manifest_sha256"),
        "exploratory": bool(headline.get("exploratory")),
        # every cohort has fewer pairs than the gate: insufficient by design
        "belowGate": bool(meta.get("all_below_gate")),
        "gate": headline.get("gate"),
        "usage": usage,
        "contrasts": contrasts,
        "definitions": dict(by_arm),
        "note": SCRIPTED_NOTE,
    }


def _number(value: Any) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def _why(contrast: Mapping[str, Any], question: str) -> str:
    """`` (skewed 2)``: the reasons behind an answer that is not saved/cost more."""
    if contrast.get(question) not in ("insufficient", "no evidence"):
        return ""
    reasons = (contrast.get("reasons") or {}).get(question) or {}
    shown = ", ".join(f"{reason_text(r)} {n}" for r, n in list(reasons.items())[:2])
    return f" ({shown})" if shown else ""


def answer_lines(answer: Mapping[str, Any] | None) -> list[str]:
    """The answer in sentences (markdown; the HTML report shows the same lines)."""
    if not answer:
        return []
    name = f"{answer.get('id')} {answer.get('version')}"
    sha = str(answer.get("manifestSha256") or "")[:12]
    lines = [f"Did **{name}** (manifest {sha}) save?"]
    for arm, m in (answer.get("definitions") or {}).items():
        d = m.get("definitionTokensPerRequest") or {}
        lines.append(
            f"Definition cost ({arm}): {_number(d.get('median'))} cl100k tokens per model "
            f"request (median of {m.get('requests')} requests in {m.get('episodes')} treated "
            f"episodes; {_number(d.get('min'))}–{_number(d.get('max'))})."
        )
    for c in answer.get("contrasts", []):
        words = ", ".join(f"{title} **{c.get(q)}**" + _why(c, q) for q, title in _QUESTIONS)
        cohorts = "task cohort" if c.get("cohorts") == 1 else "task cohorts"
        lines.append(
            f"{c.get('client')} {c.get('clientVersion')}, {c.get('treatment')} vs "
            f"{c.get('control')} ({c.get('cohorts')} {cohorts}): {words}; definitions "
            f"{_number(c.get('definitionTokensPerRequest'))} tokens per request."
        )
    if answer.get("belowGate") or answer.get("exploratory"):
        lines.append(
            f"{'Insufficient by design' if answer.get('belowGate') else 'Exploratory'}: "
            f"fewer pairs per task than the gate ({answer.get('gate')}); 'insufficient' "
            "means no claim either way, not 'no saving'. Run more repetitions for an answer."
        )
    usage = answer.get("usage")
    if usage == "floor":
        lines.append(
            "No usage recipe ran (the scripted model called none of its tools): the run "
            "measures the floor, the context cost of its definitions on every request."
        )
    elif usage == "recipe":
        for arm, m in (answer.get("definitions") or {}).items():
            lines.append(
                f"A usage recipe ran ({arm}): the scripted model called its tools "
                f"{m.get('toolCalls')} times in {m.get('episodesCallingTools')} treated "
                f"episodes (their real payloads; {_number(m.get('toolErrors'))} answered an "
                "error)."
            )
    lines.append(str(answer.get("note") or SCRIPTED_NOTE))
    return lines


def render_answer_markdown(answer: Mapping[str, Any] | None) -> list[str]:
    lines = answer_lines(answer)
    if not lines:
        return []
    return ["## The intervention's answer", "", *[f"- {line}" for line in lines], ""]


__all__ = [
    "ANSWER_WORDS",
    "SCRIPTED_NOTE",
    "answer_lines",
    "answer_word",
    "build_intervention_answer",
    "intervention_measures",
    "render_answer_markdown",
]
