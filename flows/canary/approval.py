"""Asking for and recording a canary's approval (DESIGN 9, step 2).

The flow pauses for a typed :class:`CanaryApproval` (the Prefect UI's Resume
form, whose description shows the budget and each quota window's share, with a
warning where it exceeds what remains). Nothing runs before approval; a
rejection or a timeout ends the trial with zero episodes in a Cancelled state
whose message says why, and the manifest artifact is headed by the decision.
The approval record (who, when, note, budget acknowledgement, and the account's
certification as the form showed it) is written to ``trials/approval.json`` and the
manifest's ``approval``, and published with the run. On a registered account the form
says its certification (``pairlab certify --account``: certified, stale with why, failed,
or not certified; core/account_certification.py); it refuses nothing (DESIGN 4c sets no
such gate): the approver decides. A credential pasted into the form's approver or note is
refused by the server before it stores the input (issue 27, item 2; ``_approval_schema``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

from prefect import State
from prefect.artifacts import create_markdown_artifact
from prefect.exceptions import Abort, FlowPauseTimeout
from prefect.flow_runs import pause_flow_run, suspend_flow_run
from prefect.input import RunInput
from prefect.states import Cancelled
from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from flows.canary.manifest import (
    TRIALS,
    budget_lines,
    expected_total_line,
    manifest_markdown,
    show_manifest,
)
from flows.form_schema import NO_CREDENTIAL
from flows.params import CanaryTrialParams
from pairlab.adapters.run.directory import RunDir
from pairlab.core.account_certification import CertificationStatus
from pairlab.core.accounts import refuse_credential_parameters
from pairlab.core.canary import TrialManifest
from pairlab.core.errors import InvalidInputError
from pairlab.core.redaction import credential_regex
from pairlab.core.schemas.quota import QuotaObservation
from tasks.report import artifact_key

Outcome = Literal["approved", "rejected", "timeout"]


TEXT_FIELDS = ("approver", "note")


def _approval_schema(schema: dict[str, Any]) -> None:
    """The Resume form's schema: the budget acknowledgement is required (the form shows it
    as such, pre-set to off), and approving needs it on — enforced by the server, which
    validates the input with this schema on resume (and stores it only once valid).

    A credential pasted into the approver or the note is refused the same way, by the
    server, so it is never stored (the rule of core/accounts.refuse_credential_parameters:
    the redaction rules' credential kinds, core/redaction.credential_regex): the server's
    refusal says which field, never the value."""
    required = schema.setdefault("required", [])
    if "budget_acknowledged" not in required:
        required.append("budget_acknowledged")
    schema["if"] = {"properties": {"approve": {"const": True}}, "required": ["approve"]}
    schema["then"] = {
        "properties": {"budget_acknowledged": {"const": True}},
        "required": ["budget_acknowledged"],
    }
    for name in TEXT_FIELDS:
        field = schema["properties"][name]
        field["if"] = {"type": "string", "pattern": credential_regex()}
        field["then"] = {"const": NO_CREDENTIAL}


class CanaryApproval(RunInput):
    """Approve or reject a paused canary trial (the Resume form in the Prefect UI)."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra=_approval_schema, hide_input_in_errors=True
    )

    approve: bool = Field(description="Run the trial (off = reject; nothing runs)")
    approver: str = Field(
        min_length=1, max_length=200, pattern=r"\S", description="Who decides (recorded)"
    )
    note: str = Field("", max_length=2000, description="Why (recorded with the decision)")
    budget_acknowledged: bool = Field(
        False,
        description="I acknowledge the expected quota budget shown above (must be on to approve)",
    )

    @field_validator(*TEXT_FIELDS)
    @classmethod
    def _no_credential(cls, value: str, info: ValidationInfo) -> str:
        """The flow's own check of the rule the server enforces (see _approval_schema)."""
        try:
            refuse_credential_parameters({str(info.field_name): value})
        except InvalidInputError as exc:
            raise ValueError(str(exc)) from exc
        return value

    @model_validator(mode="after")
    def _budget_ack(self) -> CanaryApproval:
        if self.approve and not self.budget_acknowledged:
            raise ValueError("approving a trial requires budget_acknowledged = true")
        return self


def certification_lines(account: str, certification: CertificationStatus) -> list[str]:
    """The approval's words on the account's certification (bold unless it holds)."""
    line = certification.line(account)
    if certification.state != "certified":
        line = f"**{line}**"
    return [f"Account `{account}`: {line}", ""]


def ceiling_lines(
    ceiling_tokens: int | None, ceiling_percent: float | None, on_account: bool
) -> list[str]:
    """The ceilings the approver signs, one short line each (their rule follows the budget,
    :func:`ceiling_rules`); on an account without one, that there is none."""
    lines = []
    if ceiling_tokens is not None:
        lines.append(f"**Ceiling: {ceiling_tokens:,} billed tokens.**")
    if ceiling_percent is not None:
        lines.append(f"**Ceiling: {ceiling_percent:g}% of each window.**")
    if not lines and on_account:
        lines.append("**No budget ceiling**: nothing stops the trial before its plan is done.")
    return [line for text in lines for line in (text, "")]


def ceiling_rules(ceiling_tokens: int | None, ceiling_percent: float | None) -> list[str]:
    """How each ceiling holds (core/budget.py, core/budget_window.py)."""
    rules = []
    if ceiling_tokens is not None:
        rules.append(
            "The token ceiling: before each AB/BA pair the trial adds what it spent to what "
            "the pair could spend and runs no further pair when that would cross it."
        )
    if ceiling_percent is not None:
        rules.append(
            "The window ceiling: before each AB/BA pair the trial reads the windows and runs "
            "no further pair when what it used since it started plus what the pair could use "
            "(whole-percent readings at their upper bound) would cross it."
        )
    if rules:
        rules.append("A stopped trial is judged on the pairs that ran and ends budget-exhausted.")
    return ["", " ".join(rules)] if rules else []


def approval_description(
    manifest: TrialManifest,
    windows: Sequence[QuotaObservation] | None = None,
    ceiling_percent: float | None = None,
    certification: CertificationStatus | None = None,
    ceiling_tokens: int | None = None,
) -> str:
    """The Resume form's description: what would run and its budget, with warnings;
    ``windows``: the account's windows read before the pause (each window's expected share
    of what remains, core/canary/window_share.py); ``certification``: the account's, as it
    stands now (None: no account); ``ceiling_percent`` / ``ceiling_tokens``: the ceilings
    the approver signs (``budget_window_percent``, ``budget_tokens``).

    What the approver signs comes first (the account's certification, the ceilings, each
    window's share with its warning), the totals, rules and revisions after: the v1 UI
    shows the description in its own scrolling pane above the form (366 px high in a
    1440x1000 window), so what comes late is seen only by scrolling it."""
    account = manifest.environment.get("account")
    lines = [
        f"**Canary trial `{manifest.trial_id}`**: {len(manifest.planned)} episodes "
        f"(intervention {manifest.intervention_id}).",
        "",
        *([] if certification is None else certification_lines(str(account or "?"), certification)),
        *ceiling_lines(ceiling_tokens, ceiling_percent, on_account=account is not None),
        *budget_lines(
            manifest.budget,
            sim=manifest.baseline.sim_effects is not None,
            windows=windows,
            with_total=False,
        ),
        "",
        expected_total_line(manifest.budget),
        *ceiling_rules(ceiling_tokens, ceiling_percent),
        "",
        f"Baseline `{manifest.baseline.revision}` → candidate `{manifest.candidate.revision}`; "
        "the manifest artifact lists every frozen input and planned episode. Approving "
        "requires the budget acknowledgement; rejecting runs nothing.",
    ]
    return "\n".join(lines)


def ask_approval(
    params: CanaryTrialParams,
    manifest: TrialManifest,
    windows: Sequence[QuotaObservation] | None = None,
    certification: CertificationStatus | None = None,
) -> tuple[Outcome, CanaryApproval | None]:
    """Wait for the decision. A deployment's run is suspended (its process exits and the
    run stays Paused on the server; once resumed, a `pairlab serve` runs it again from
    the top and this returns the input); a run without a deployment pauses in place."""
    from prefect.runtime import deployment

    form = CanaryApproval.with_initial_data(
        description=approval_description(
            manifest,
            windows,
            params.budget_window_percent,
            certification,
            ceiling_tokens=params.budget_tokens,
        )
    )
    try:
        if deployment.get_id() is not None:
            decision = suspend_flow_run(
                wait_for_input=form, timeout=params.approval_timeout_s, key="canary-approval"
            )
        else:
            decision = pause_flow_run(
                wait_for_input=form,
                timeout=params.approval_timeout_s,
                poll_interval=1,
                key="canary-approval",
            )
    except FlowPauseTimeout:
        # The server turns any final state proposed by a run whose pause timed out into
        # Failed ("paused and never resumed"); Cancelling is the one way out it allows,
        # so the trial can end Cancelled with its own message.
        _leave_expired_pause(f"not approved within {params.approval_timeout_s} s")
        return "timeout", None
    if decision is None:  # resumed without input: not an approval
        return "rejected", None
    return ("approved" if decision.approve else "rejected"), decision


def _leave_expired_pause(message: str) -> None:
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run
    from prefect.states import Cancelling

    run_id = flow_run.get_id()
    if run_id is None:
        return
    with get_client(sync_client=True) as client:
        client.set_flow_run_state(UUID(run_id), Cancelling(message=message))


def submitted_at() -> datetime | None:
    """When the operator submitted the Resume form: the time of the state the server set on
    resume (``Resuming`` for a suspended run, ``Running`` for one paused in place), the one
    after the last Paused state. Not when the run went on: a suspended run waits for the
    next `pairlab serve`, which may be minutes later. None outside a server's flow run."""
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run

    run_id = flow_run.get_id()
    if run_id is None:
        return None
    with get_client(sync_client=True) as client:
        states = sorted(client.read_flow_run_states(UUID(run_id)), key=lambda s: s.timestamp)
    paused = [i for i, state in enumerate(states) if state.is_paused()]
    if not paused or paused[-1] + 1 >= len(states):
        return None
    return states[paused[-1] + 1].timestamp


def approval_record(
    outcome: Outcome,
    decision: CanaryApproval | None,
    params: CanaryTrialParams,
    decided_at: datetime | None = None,
    certification: CertificationStatus | None = None,
) -> dict[str, Any]:
    """The decision as recorded; ``decided_at`` is the form's submission (now if unknown);
    ``account_certification``: the account's certification as the form showed it."""
    return {
        "schema_version": 1,
        "outcome": outcome,
        "approved": outcome == "approved",
        "approver": decision.approver if decision else None,
        "note": decision.note if decision else None,
        "budget_acknowledged": decision.budget_acknowledged if decision else None,
        "decided_at": (decided_at or datetime.now(UTC)).isoformat(),
        "timeout_s": params.approval_timeout_s,
        "account_certification": (
            None if certification is None else certification.to_json(params.account or "NAME")
        ),
    }


def decide(
    params: CanaryTrialParams,
    run_dir: RunDir,
    manifest: TrialManifest,
    windows: Sequence[QuotaObservation] | None = None,
    certification: CertificationStatus | None = None,
) -> dict[str, Any]:
    """Wait for the decision and record it: ``trials/approval.json``, the manifest's
    ``approval`` and a new version of the manifest artifact headed by the decision."""
    outcome, decision = ask_approval(params, manifest, windows, certification)
    decided_at = submitted_at() if outcome != "timeout" else None
    approval = approval_record(outcome, decision, params, decided_at, certification)
    run_dir.write_json(f"{TRIALS}/approval.json", approval)
    decided = manifest.model_copy(update={"approval": approval})
    run_dir.write_json(f"{TRIALS}/manifest.json", decided.model_dump(mode="json"))
    show_manifest(
        manifest.trial_id,
        manifest_markdown(decided, heading=decision_heading(approval, params)),
        f"canary manifest — {decision_heading(approval, params)}",
    )
    return approval


def decision_heading(approval: dict[str, Any], params: CanaryTrialParams) -> str:
    if approval["outcome"] == "rejected":
        return f"rejected by {approval['approver'] or 'unknown'}: {approval['note'] or 'no note'}"
    if approval["outcome"] == "timeout":
        return f"not approved within {params.approval_timeout_s} s"
    return f"approved by {approval['approver']}"


def end_not_run(message: str, result: dict[str, Any]) -> State[Any]:
    """The final state of a trial that did not run: Cancelled, with its reason.

    Returned as it is when the flow is called in process (the caller reads ``result``).
    A served run instead sets Cancelled on the server and ends by Prefect's ``Abort``
    signal: the engine raises on the result of a Cancelled state a flow returns, and logs
    that as an ERROR with a traceback after the run already ended — a rejection is an
    outcome, not an error.
    """
    from prefect.client.orchestration import get_client
    from prefect.runtime import deployment, flow_run

    run_id = flow_run.get_id()
    if deployment.get_id() is None or run_id is None:
        return Cancelled(message=message, data=result)
    with get_client(sync_client=True) as client:
        client.set_flow_run_state(UUID(run_id), Cancelled(message=message), force=True)
        final = client.read_flow_run(UUID(run_id)).state
    signal = Abort(message)
    signal.state = final  # type: ignore[attr-defined]  # the engine reads it as the run's state
    raise signal


def not_run(trial_id: str, approval: dict[str, Any], params: CanaryTrialParams) -> dict[str, Any]:
    """The outcome of a trial that was rejected or timed out: nothing ran, and why."""
    why = decision_heading(approval, params)
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
