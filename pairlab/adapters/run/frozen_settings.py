"""Freezing a run's settings when it starts, and resuming it with them: ``<run>/settings.json``.

A new run writes its parameters (JSON mode) before the first episode. A resumed run
reads them back and reconciles the request with them (the rule is
:func:`pairlab.core.frozen_settings.resume_settings`); a new approved ceiling
(``budget_tokens``) is written into the frozen settings, so a later resume keeps it; each resume that changed an
operational field or took frozen values over the request appends one line to
``<run>/resumes.jsonl``, so what a resume did is on record beside the run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pairlab.adapters.run.directory import RunDir, write_atomic
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.frozen_settings import (
    APPROVAL_FIELDS,
    FROZEN_SETTINGS_NAME,
    RESUMES_NAME,
    ResumeDecision,
    resume_settings,
)


def read_frozen_settings(run_dir: RunDir) -> dict[str, Any] | None:
    """The run's frozen settings, or None when the run has none (a new run)."""
    path = run_dir.path / FROZEN_SETTINGS_NAME
    if not path.exists():
        return None
    try:
        payload = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(
            f"{path}: the run's frozen settings are not valid JSON",
            reason=ReasonCode.MALFORMED_INPUT,
        ) from exc
    if not isinstance(payload, dict):
        raise InvalidInputError(
            f"{path}: the run's frozen settings must be a JSON object",
            reason=ReasonCode.MALFORMED_INPUT,
        )
    return payload


def write_frozen_settings(run_dir: RunDir, settings: Mapping[str, Any]) -> None:
    """Freeze a new run's settings (a run that has them keeps them)."""
    path = run_dir.path / FROZEN_SETTINGS_NAME
    if not path.exists():
        body = json.dumps(dict(settings), indent=2, sort_keys=True).encode("utf-8") + b"\n"
        write_atomic(path, body)


def resume_with_frozen_settings(
    run_dir: RunDir, requested: Mapping[str, Any], untouched: Mapping[str, Any]
) -> ResumeDecision | None:
    """A resumed run's settings reconciled with its frozen ones (refused with
    ``resume-changed`` when the request changes what it measures); None for a new run."""
    frozen = read_frozen_settings(run_dir)
    if frozen is None:
        return None
    decision = resume_settings(run_dir.run_id, frozen, requested, untouched)
    approved = {k: v["now"] for k, v in decision.changed.items() if k in APPROVAL_FIELDS}
    if approved:  # the latest approved ceiling is the run's from now on (a later resume keeps it)
        body = json.dumps({**frozen, **approved}, indent=2, sort_keys=True).encode("utf-8")
        write_atomic(run_dir.path / FROZEN_SETTINGS_NAME, body + b"\n")
    if decision.taken_from_run or decision.changed:
        line = {
            "at": datetime.now(UTC).isoformat(),
            "taken_from_run": decision.taken_from_run,
            "changed": decision.changed,
        }
        with (run_dir.path / RESUMES_NAME).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line, sort_keys=True) + "\n")
    return decision
