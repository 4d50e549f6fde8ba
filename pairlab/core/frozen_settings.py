"""A run's frozen settings and the resume rule: a resume never changes a run.

A new run writes its parameters to ``<run>/settings.json`` before the first episode
(beside ``plan.json`` and ``schedule.json``). Resuming it (the same run id) takes
every setting from that file. A resume request carries a value for every field
(a form is pre-filled with its deployment's parameters, a command line with its
defaults), so each field of the request is one of:

* equal to the frozen value: nothing to say;
* an *operational* field (how the run is executed, not what it measures:
  concurrency, dispatch, kept workspaces, work dir, secrets policy): the new value
  applies, and the change is recorded (``<run>/resumes.jsonl``);
* otherwise, equal to the entry point's untouched default (the form's pre-filled
  value): the frozen value is taken, and the field is named in the log;
* otherwise the operator asked to change what the run measures: refused
  (``resume-changed``, exit 2), naming every such field with both values.

An *approval* field (a budget ceiling, ``budget_tokens`` or ``budget_window_percent``:
what the run may spend, not what it measures) is neither: a resume that leaves it untouched keeps the run's value (a
resume never drops an approved ceiling by omission), and a new value, higher or lower,
replaces it and is recorded as changed; the run then keeps the new value as its frozen
one (``adapters/run/frozen_settings.py``). A ceiling lowered below what the run already
spent stops it at once (``budget-exhausted``, core/budget.py). A resume cannot remove a
ceiling: an operator who wants more raises it.

Independently, a resume whose plan would leave out an episode already recorded is
refused (``resume-drops-episodes``): finished work is never dropped silently, even
for a run that has no settings file.

Pure: dictionaries in, a decision or an :class:`InvalidInputError` out.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pairlab.core.errors import InvalidInputError, ReasonCode

FROZEN_SETTINGS_NAME: Final = "settings.json"
RESUMES_NAME: Final = "resumes.jsonl"
# How a run is executed, never what it measures: may change on a resume (recorded).
OPERATIONAL_FIELDS: Final = frozenset(
    {"run_id", "work_dir", "concurrency", "dispatch", "keep_workspaces", "on_secret"}
)
# What the run is approved to spend: untouched keeps the run's value, a new value replaces it.
APPROVAL_FIELDS: Final = frozenset({"budget_tokens", "budget_window_percent"})


@dataclass(frozen=True)
class ResumeDecision:
    """The settings a resume runs with and what it did with the request's values."""

    settings: dict[str, Any]
    taken_from_run: list[str] = field(default_factory=list)  # untouched defaults replaced
    changed: dict[str, dict[str, Any]] = field(default_factory=dict)  # operational: run/now


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def resume_settings(
    run_id: str,
    frozen: Mapping[str, Any],
    requested: Mapping[str, Any],
    untouched: Mapping[str, Any],
    operational: Collection[str] = OPERATIONAL_FIELDS,
    approval: Collection[str] = APPROVAL_FIELDS,
) -> ResumeDecision:
    """The settings of a resumed run (rules in the module docstring).

    ``frozen``, ``requested`` and ``untouched`` are JSON-mode dumps of the run's
    parameters: as frozen when it started, as the resume asks, and as the entry point
    fills them in when nothing is touched. A field the frozen settings lack (a field
    added after the run started) takes the request's value.
    """
    settings = dict(requested)
    taken: list[str] = []
    changed: dict[str, dict[str, Any]] = {}
    refused: list[str] = []
    for name, asked in requested.items():
        if name not in frozen or frozen[name] == asked:
            continue
        if name in operational:
            if name != "run_id":
                changed[name] = {"run": frozen[name], "now": asked}
            continue
        if name in approval:
            if name in untouched and untouched[name] == asked:
                settings[name] = frozen[name]
                taken.append(name)
            else:
                changed[name] = {"run": frozen[name], "now": asked}
            continue
        settings[name] = frozen[name]
        if name in untouched and untouched[name] == asked:
            taken.append(name)
        else:
            refused.append(f"{name} (run: {_show(frozen[name])}, asked: {_show(asked)})")
    if refused:
        raise InvalidInputError(
            f"resume of run {run_id} refused: it would change the run's frozen settings: "
            f"{'; '.join(refused)}. Leave these at the run's values (or clear Run Id to "
            "start a new run)",
            reason=ReasonCode.RESUME_CHANGED,
        )
    return ResumeDecision(settings=settings, taken_from_run=taken, changed=changed)


def check_nothing_dropped(run_id: str, recorded: Iterable[str], planned: Iterable[str]) -> None:
    """Refuse a resume whose plan leaves out episodes the run already recorded."""
    dropped = sorted(set(recorded) - set(planned))
    if dropped:
        shown = ", ".join(dropped[:3]) + (
            f" and {len(dropped) - 3} more" if len(dropped) > 3 else ""
        )
        raise InvalidInputError(
            f"resume of run {run_id} refused: its plan leaves out {len(dropped)} recorded "
            f"episode(s) ({shown}); resume with the run's own settings",
            reason=ReasonCode.RESUME_DROPS_EPISODES,
        )
