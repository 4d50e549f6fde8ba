"""What the evidence-eval and canary flows build the same way for one planned episode:
the :class:`EpisodeSpec` handed to a backend, and the episode record (priced with
the catalog) from what the episode produced.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pairlab.adapters.backends.base import EpisodeSpec, GraphSeed, RunOutcome
from pairlab.adapters.episode.io import EpisodeUsage, price_episode
from pairlab.core.findings.evidence import EpisodeEvidence
from pairlab.core.findings.retrieval import DEFAULT_HOLDOUT_SHARE
from pairlab.core.quota.consumption import UNKNOWN_CONCURRENT_USE, ConcurrentUse
from pairlab.core.records import build_episode_record, exclusion_for
from pairlab.core.schedule import PlannedEpisode
from pairlab.core.schemas.catalog import LoadedSuite, TaskEntry
from pairlab.core.schemas.episode import EpisodeRecord, GraderCheck
from pairlab.core.schemas.profile import RunnerProfile
from pairlab.core.schemas.quota import QuotaObservation


def episode_spec(
    planned: PlannedEpisode,
    *,
    run_id: str,
    suite: LoadedSuite,
    entry: TaskEntry,
    profile: RunnerProfile,
    model: str | None,
    seed: int,
    keep_workspace: bool,
    account_dir: Path | None,
    extra_env: dict[str, str] | None = None,
    timeout_s: float | None = None,
    endpoint_url: str | None = None,
    holdout_share: float = DEFAULT_HOLDOUT_SHARE,
    carried_graph: Path | None = None,
) -> EpisodeSpec:
    """The backend's spec for one planned episode (``timeout_s`` None: the profile's;
    ``model`` None: the profile's default model; ``endpoint_url``: the episode's base URL
    on the run's provider emulator). ``entry`` is the planned task's catalog entry, looked
    up once by the caller and passed along the episode's path. Retrieval and full arms
    get the task's catalog findings (and a carried graph: the warm stratum) planted in
    their graph, holdouts seeded by the run seed."""
    _same_task(planned, entry)
    graph_seed = (
        GraphSeed(
            findings=list(entry.seed_findings),
            holdout_share=holdout_share,
            holdout_seed=str(seed),
            carried=carried_graph,
        )
        if entry.seed_findings or carried_graph is not None
        else None
    )
    return EpisodeSpec(
        run_id=run_id,
        episode_id=planned.episode_id,
        pair_id=planned.pair_id,
        task_id=planned.task_id,
        arm=planned.arm,
        prompt=entry.prompt,
        profile=profile,
        fixture_dir=suite.fixture_path(entry),
        workspace_subdir=entry.workspace,
        solution_dir=suite.solution_path(entry) if profile.mount_solution else None,
        final_answer=entry.final_answer if profile.mount_solution else None,
        model=model or profile.model,
        timeout_s=timeout_s or profile.timeout_s,
        keep_workspace=keep_workspace,
        seed=seed,
        extra_env=dict(extra_env or {}),
        sim_account_dir=account_dir,
        endpoint_url=endpoint_url,
        graph_seed=graph_seed,
    )


def episode_record(
    planned: PlannedEpisode,
    *,
    run_id: str,
    stratum: str | None,
    suite: LoadedSuite,
    entry: TaskEntry,
    profile: RunnerProfile,
    backend_name: str,
    requested_model: str | None,
    outcome: RunOutcome,
    usage: EpisodeUsage,
    checks: Sequence[GraderCheck],
    quota_before: list[QuotaObservation],
    quota_after: list[QuotaObservation],
    ledger: dict[str, int | None] | None,
    include_transcript: bool,
    concurrent_use: ConcurrentUse = UNKNOWN_CONCURRENT_USE,
    evidence: EpisodeEvidence | None = None,
) -> EpisodeRecord:
    """The schema-v2 record of one episode; the suite's exclusion rules applied, usage priced,
    quota consumption per window computed (null + reason unless usable); with the
    intervention's ``evidence`` its finding fields and the exact/fallback tool-call join."""
    _same_task(planned, entry)
    model = usage.primary_model or requested_model or profile.model
    list_price_usd, catalog_version = price_episode(
        profile, model, outcome.started_at, usage.vector, usage.api_calls
    )
    record = build_episode_record(
        run_id=run_id,
        episode_id=planned.episode_id,
        pair_id=planned.pair_id,
        task_id=planned.task_id,
        arm=planned.arm,
        repetition=planned.repetition,
        order=planned.order,
        stratum=stratum,
        client=profile.client,
        client_version=usage.cli_version or profile.version,
        model=model,
        model_version=None,
        session_id=usage.session_id,
        backend=backend_name,
        started_at=outcome.started_at,
        ended_at=outcome.ended_at,
        exit_code=outcome.exit_code,
        timed_out=outcome.timed_out,
        latency_ms=outcome.latency_ms,
        prompt=entry.prompt,
        stdout=outcome.stdout,
        stderr=outcome.stderr,
        include_transcript=include_transcript,
        usage=usage.vector,
        api_calls=usage.api_calls,
        usage_provenance=usage.provenance_counts(),
        checks=checks,
        exclusion=exclusion_for(
            started=outcome.exit_code is not None or outcome.timed_out,
            checks=checks,
            rules=[r.when for r in suite.suite.exclusion_rules],
        ),
        quota_before=quota_before,
        quota_after=quota_after,
        # No client surface here exposes tool-call ids: the labelled episode fallback join.
        join_method="fallback",
        delivered_tokens=ledger.get("observed_returned_tokens") if ledger else None,
        cost_usd=usage.provider_reported_cost_usd,
        ledger=ledger,
        api_list_price_usd=list_price_usd,
        price_catalog_version=catalog_version,
        concurrent_use=concurrent_use,
        quota_interval_id=planned.quota_interval,
    )
    return record if evidence is None else with_evidence(record, evidence)


def with_evidence(record: EpisodeRecord, evidence: EpisodeEvidence) -> EpisodeRecord:
    """The record with the intervention's own account of findings and the tool-call join."""
    return record.model_copy(
        update={
            "finding_ids": evidence.finding_ids,
            "shadow_finding_ids": evidence.shadow_finding_ids,
            "delivered_tokens": evidence.delivered_tokens,
            "shadow_tokens": evidence.shadow_tokens,
            "injection_id": evidence.injection_id,
            "tool_call_id": evidence.tool_call_id,
            "join_method": evidence.join_method,
            "join_fallback_reason": evidence.join_fallback_reason,
            "mcp_tool_calls": evidence.mcp_calls,
            "finding_evidence": evidence.to_json(),
        }
    )


def _same_task(planned: PlannedEpisode, entry: TaskEntry) -> None:
    if entry.id != planned.task_id:  # a caller passed another episode's entry: a bug, not input
        raise ValueError(f"task entry {entry.id!r} given for planned task {planned.task_id!r}")
