"""Asking for and recording a canary's approval (DESIGN 9, step 2).

The flow pauses for a typed :class:`CanaryApproval` (the Prefect UI's Resume
form). Nothing runs before approval; a rejection or a timeout ends the trial
with zero episodes, says why (``trials/approval.json``, the return value and a
markdown artifact). The approval record is published with the run.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from prefect.artifacts import create_markdown_artifact
from prefect.exceptions import FlowPauseTimeout
from prefect.flow_runs import pause_flow_run
from prefect.input import RunInput
from pydantic import ConfigDict, Field, model_validator

from flows.canary_manifest import TRIALS
from flows.params import CanaryTrialParams
from pairlab.adapters.rundir import RunDir
from tasks.report import artifact_key

Outcome = Literal["approved", "rejected", "timeout"]


class CanaryApproval(RunInput):
    """Approve or reject a paused canary trial (the Resume form in the Prefect UI)."""

    model_config = ConfigDict(
        extra="forbid",
        # Enforced by the server on resume (it validates with the JSON schema):
        # approving requires the budget acknowledgement.
        json_schema_extra={
            "if": {"properties": {"approve": {"const": True}}, "required": ["approve"]},
            "then": {
                "properties": {"budget_acknowledged": {"const": True}},
                "required": ["budget_acknowledged"],
            },
        },
    )

    approve: bool = Field(description="Run the trial (false = reject; nothing runs)")
    approver: str = Field(
        min_length=1, max_length=200, pattern=r"\S", description="Who decides (recorded)"
    )
    note: str = Field("", max_length=2000, description="Why (recorded)")
    budget_acknowledged: bool = Field(
        False, description="I acknowledge the expected quota budget shown in the manifest"
    )

    @model_validator(mode="after")
    def _budget_ack(self) -> CanaryApproval:
        if self.approve and not self.budget_acknowledged:
            raise ValueError("approving a trial requires budget_acknowledged = true")
        return self


def ask_approval(params: CanaryTrialParams) -> tuple[Outcome, CanaryApproval | None]:
    try:
        decision = pause_flow_run(
            wait_for_input=CanaryApproval,
            timeout=params.approval_timeout_s,
            poll_interval=1,
            key="canary-approval",
        )
    except FlowPauseTimeout:
        return "timeout", None
    return ("approved" if decision.approve else "rejected"), decision


def approval_record(
    outcome: Outcome, decision: CanaryApproval | None, params: CanaryTrialParams
) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "outcome": outcome,
        "approved": outcome == "approved",
        "approver": decision.approver if decision else None,
        "note": decision.note if decision else None,
        "budget_acknowledged": decision.budget_acknowledged if decision else None,
        "decided_at": datetime.now(UTC).isoformat(),
        "timeout_s": params.approval_timeout_s,
    }


def decide(params: CanaryTrialParams, run_dir: RunDir) -> dict[str, Any]:
    """Pause for the approval and record it (``trials/approval.json``)."""
    outcome, decision = ask_approval(params)
    approval = approval_record(outcome, decision, params)
    run_dir.write_json(f"{TRIALS}/approval.json", approval)
    return approval


def not_run(trial_id: str, approval: dict[str, Any], params: CanaryTrialParams) -> dict[str, Any]:
    """The outcome of a trial that was rejected or timed out: nothing ran, and why."""
    why = (
        f"rejected by {approval['approver']}: {approval['note'] or 'no note'}"
        if approval["outcome"] == "rejected"
        else f"no approval within {params.approval_timeout_s} s"
    )
    create_markdown_artifact(
        key=artifact_key("canary-outcome", trial_id),
        markdown=f"# Canary trial `{trial_id}` not run\n\n{why}. Zero episodes executed.\n",
        description="canary trial outcome",
    )
    return {
        "trial_id": trial_id,
        "outcome": approval["outcome"],
        "reason": why,
        "episodes": 0,
        "verdict": None,
    }
