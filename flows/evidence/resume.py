"""A resume never changes a run: the eval's parameters reconciled with its frozen settings.

What counts as "untouched" is what the entry point sends when the operator changes
nothing: a deployment's parameters (the form is pre-filled with them) over the
model's defaults; a flow run without a deployment (``pairlab eval``), the model's
defaults. The rule itself is :mod:`pairlab.core.frozen_settings`.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from flows.params import EvidenceEvalParams
from pairlab.adapters.run.directory import RunDir
from pairlab.adapters.run.frozen_settings import resume_with_frozen_settings
from pairlab.core.frozen_settings import FROZEN_SETTINGS_NAME, ResumeDecision


def untouched_params() -> dict[str, Any]:
    """The parameters a run gets when nothing is changed (JSON mode)."""
    from prefect.client.orchestration import get_client
    from prefect.runtime import deployment

    untouched = EvidenceEvalParams().model_dump(mode="json")
    deployment_id = deployment.get_id()
    if deployment_id is None:
        return untouched
    with get_client(sync_client=True) as client:
        found = client.read_deployment(UUID(deployment_id))
    given = (found.parameters or {}).get("params")
    if isinstance(given, dict):
        untouched.update(given)
    return untouched


def settle_params(
    params: EvidenceEvalParams, run_dir: RunDir
) -> tuple[EvidenceEvalParams, ResumeDecision | None]:
    """The parameters the run goes on with: its frozen settings on a resume (a request that
    changes what the run measures is refused, ``resume-changed``); the request as it is
    for a new run (None: nothing to reconcile)."""
    if not (run_dir.path / FROZEN_SETTINGS_NAME).exists():
        return params, None
    requested = params.model_dump(mode="json")
    decision = resume_with_frozen_settings(run_dir, requested, untouched_params())
    if decision is None:
        return params, None
    return EvidenceEvalParams.model_validate(decision.settings), decision


def resume_text(run_id: str, decision: ResumeDecision | None) -> str | None:
    """The log line of a resume that took frozen values or changed operational ones."""
    if decision is None:
        return None
    parts = []
    if decision.taken_from_run:
        parts.append("kept from the run's frozen settings: " + ", ".join(decision.taken_from_run))
    if decision.changed:
        parts.append(
            "changed for this attempt: "
            + ", ".join(f"{k} {v['run']} -> {v['now']}" for k, v in decision.changed.items())
        )
    return f"run {run_id} resumed; " + "; ".join(parts) if parts else None
