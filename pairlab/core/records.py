"""Building the episode record (schema v2) from what one episode produced.

Pure: the record is assembled from typed parts (identity, outcome, usage, quota
interval, grading, delivery evidence), each built by the step that knows it; this
module only decides what goes into the record (including the per-window quota
consumption, :mod:`pairlab.core.quota.consumption`).
Missing measurements stay ``None``; transcripts are attached only when asked for,
hashes always.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pairlab.core.findings.evidence import EpisodeEvidence
from pairlab.core.intervention_health import InterventionHealth
from pairlab.core.quota.consumption import (
    UNKNOWN_CONCURRENT_USE,
    ConcurrentUse,
    interval_consumption,
)
from pairlab.core.schemas.episode import (
    EpisodeRecord,
    GraderCheck,
    InterventionTools,
    Transcript,
)
from pairlab.core.schemas.profile import InterventionStamp
from pairlab.core.schemas.quota import QuotaObservation
from pairlab.core.schemas.usage import UsageVector


def sha256_text(text: str | None) -> str | None:
    if text is None:
        return None
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def all_passed(results: Sequence[bool | None]) -> bool | None:
    """Three-valued AND: False if any failed, else None if any is unknown (or there is
    nothing to judge), else True."""
    if not results:
        return None
    if any(r is False for r in results):
        return False
    if any(r is None for r in results):
        return None
    return True


def is_correct(checks: Sequence[GraderCheck]) -> bool | None:
    """Correct only when every check passed; unknown when a check could not run."""
    return all_passed([c.passed for c in checks])


def exclusion_for(
    *,
    started: bool,
    checks: Sequence[GraderCheck],
    rules: Sequence[str],
    intervention: InterventionHealth | None = None,
) -> str | None:
    """Apply the suite's pre-registered exclusion rules; returns the rule kind or None.

    A treated episode whose intervention was not there (``intervention``'s status is a
    fault: start failed, timeout, exited, not loaded; :mod:`pairlab.core.intervention_health`)
    is always excluded with that status as its reason, whatever the suite declares: it
    did not measure the intervention. Only a CLI that never started comes first."""
    if not started and "infrastructure-failure-before-start" in rules:
        return "infrastructure-failure-before-start"
    if intervention is not None and intervention.is_fault:
        return intervention.status.value
    if any(c.passed is None for c in checks) and "grader-infrastructure-error" in rules:
        return "grader-infrastructure-error"
    return None


@dataclass(frozen=True)
class EpisodeIdentity:
    """Which planned episode this is (from the schedule)."""

    run_id: str
    episode_id: str
    pair_id: str
    task_id: str
    arm: str
    repetition: int
    order: int
    stratum: str | None = None
    quota_interval_id: str | None = None
    intervention: InterventionStamp | None = None  # the run's (the loaded profile's)


@dataclass(frozen=True)
class EpisodeOutcome:
    """What the agent's run did (from the backend), and whether to keep its transcript."""

    backend: str
    started_at: datetime | None
    ended_at: datetime | None
    exit_code: int | None
    timed_out: bool
    latency_ms: float | None
    prompt: str
    stdout: str
    stderr: str
    include_transcript: bool = False


@dataclass(frozen=True)
class RecordedUsage:
    """Who answered and what it used (from the usage reader), and its price."""

    client: str
    client_version: str | None
    model: str | None
    session_id: str | None
    vector: UsageVector | None
    api_calls: int | None
    provenance: dict[str, int] | None
    cost_usd: float | None = None
    api_list_price_usd: float | None = None
    price_catalog_version: str | None = None
    model_version: str | None = None
    tool_calls: int | None = None


@dataclass(frozen=True)
class QuotaInterval:
    """The quota snapshots around the run and the concurrent-use assessment (None
    snapshots: the account was not observed)."""

    before: list[QuotaObservation] | None = None
    after: list[QuotaObservation] | None = None
    concurrent_use: ConcurrentUse = UNKNOWN_CONCURRENT_USE


@dataclass(frozen=True)
class Grading:
    """The grader checks, the exclusion that applied (or None) and the treated arm's
    intervention status."""

    checks: Sequence[GraderCheck]
    exclusion: str | None = None
    intervention: InterventionHealth | None = None  # treated arms: was it there (None: unknown)


@dataclass(frozen=True)
class DeliveryEvidence:
    """The MCP ledger's totals and the intervention's finding evidence. Without the
    intervention's own account of the tool-call join, the labelled episode fallback
    join applies and the delivered tokens are the ledger's."""

    ledger: dict[str, int | None] | None = None
    findings: EpisodeEvidence | None = None

    def fields(self) -> dict[str, Any]:
        e = self.findings
        if e is None:
            delivered = self.ledger.get("observed_returned_tokens") if self.ledger else None
            return {"join_method": "fallback", "delivered_tokens": delivered, "ledger": self.ledger}
        return {
            "ledger": self.ledger,
            "finding_ids": e.finding_ids,
            "shadow_finding_ids": e.shadow_finding_ids,
            "delivered_tokens": e.delivered_tokens,
            "shadow_tokens": e.shadow_tokens,
            "injection_id": e.injection_id,
            "tool_call_id": e.tool_call_id,
            "join_method": e.join_method,
            "join_fallback_reason": e.join_fallback_reason,
            "mcp_tool_calls": e.mcp_calls,
            "finding_evidence": e.to_json(),
        }


def build_episode_record(
    identity: EpisodeIdentity,
    outcome: EpisodeOutcome,
    usage: RecordedUsage,
    quota: QuotaInterval,
    grading: Grading,
    evidence: DeliveryEvidence | None = None,
) -> EpisodeRecord:
    """The record from its parts, each built by the step that knows it. Every field is
    set once: the per-window quota consumption is computed here (null + reason unless
    usable), success from the exit code, correctness from the checks."""
    vector = usage.vector or UsageVector()
    observed = quota.before is not None or quota.after is not None
    consumption = (
        interval_consumption(quota.before, quota.after, quota.concurrent_use.unrelated)
        if observed
        else None
    )
    prompt, stdout, stderr = outcome.prompt, outcome.stdout, outcome.stderr
    return EpisodeRecord(
        episode_id=identity.episode_id,
        session_id=usage.session_id,
        client=usage.client,
        client_version=usage.client_version,
        model=usage.model,
        model_version=usage.model_version,
        task_id=identity.task_id,
        pair_id=identity.pair_id,
        arm=identity.arm,
        success=None
        if outcome.exit_code is None
        else (outcome.exit_code == 0 and not outcome.timed_out),
        correct=is_correct(grading.checks),
        latency_ms=outcome.latency_ms,
        cost_usd=usage.cost_usd,
        run_id=identity.run_id,
        repetition=identity.repetition,
        order=identity.order,
        stratum=identity.stratum,
        intervention_id=identity.intervention.id if identity.intervention else None,
        intervention_version=identity.intervention.version if identity.intervention else None,
        intervention_manifest_sha256=(
            identity.intervention.manifest_sha256 if identity.intervention else None
        ),
        started_at=outcome.started_at,
        ended_at=outcome.ended_at,
        exit_code=outcome.exit_code,
        timed_out=outcome.timed_out,
        excluded=grading.exclusion is not None,
        excluded_reason=grading.exclusion,
        intervention_status=grading.intervention.status.value if grading.intervention else None,
        intervention_detail=grading.intervention.detail if grading.intervention else None,
        intervention_tools=(
            InterventionTools.model_validate(grading.intervention.tools.to_json())
            if grading.intervention and grading.intervention.tools
            else None
        ),
        intervention_definition_tokens=(
            list(grading.intervention.definition_tokens)
            if grading.intervention and grading.intervention.definition_tokens is not None
            else None
        ),
        grader_checks=list(grading.checks),
        tool_calls=usage.tool_calls,
        api_calls=usage.api_calls,
        prompt_sha256=sha256_text(prompt),
        stdout_sha256=sha256_text(stdout),
        stderr_sha256=sha256_text(stderr),
        usage_provenance=usage.provenance,
        quota_before=quota.before,
        quota_after=quota.after,
        quota_consumption=consumption,
        unrelated_concurrent_quota_use=quota.concurrent_use.unrelated,
        concurrent_use_basis=quota.concurrent_use.basis,
        quota_interval_id=identity.quota_interval_id,
        price_catalog_version=usage.price_catalog_version,
        api_list_price_usd=usage.api_list_price_usd,
        backend=outcome.backend,
        transcript=Transcript(prompt=prompt, stdout=stdout, stderr=stderr)
        if outcome.include_transcript
        else None,
        uncached_input_tokens=vector.uncached_input,
        cached_input_tokens=vector.cache_read,
        cache_write5m_tokens=vector.cache_write_5m,
        cache_write1h_tokens=vector.cache_write_1h,
        cache_write_tokens=vector.cache_write_generic,
        output_tokens=vector.output,
        reasoning_tokens=vector.reasoning,
        total_tokens=vector.total,
        **(evidence.fields() if evidence is not None else {}),
    )
