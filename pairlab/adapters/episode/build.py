"""What the evidence-eval and canary flows build the same way for one planned episode:
the :class:`EpisodeSpec` handed to a backend, and the episode record (priced with
the catalog) from what the episode produced.
"""

from __future__ import annotations

from pathlib import Path

from pairlab.adapters.backends.base import EpisodeSpec, GraphSeed, RunOutcome
from pairlab.adapters.episode.io import EpisodeUsage, price_episode
from pairlab.adapters.episode.session import CollectedEpisode
from pairlab.adapters.quota.account import QuotaBracket
from pairlab.core.findings.retrieval import DEFAULT_HOLDOUT_SHARE
from pairlab.core.intervention_health import InterventionHealth
from pairlab.core.provider_limit import PROVIDER_LIMIT
from pairlab.core.records import (
    DeliveryEvidence,
    EpisodeIdentity,
    EpisodeOutcome,
    Grading,
    QuotaInterval,
    RecordedUsage,
    build_episode_record,
    exclusion_for,
)
from pairlab.core.schedule import PlannedEpisode
from pairlab.core.schemas.catalog import LoadedSuite, TaskEntry
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.schemas.profile import RunnerProfile


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
    suite: LoadedSuite,
    entry: TaskEntry,
    profile: RunnerProfile,
    backend_name: str,
    requested_model: str | None,
    outcome: RunOutcome,
    collected: CollectedEpisode,
    quota: QuotaBracket,
    include_transcript: bool,
    stratum: str | None = None,
    intervention: InterventionHealth | None = None,
    limited: bool = False,
) -> EpisodeRecord:
    """The schema-v2 record of one episode from the parts its steps produced: the suite's
    exclusion rules applied, usage priced, quota consumption per window computed (null +
    reason unless usable); with the intervention's evidence (``collected.evidence``) its
    finding fields and the exact/fallback tool-call join. ``stratum`` None: the plan's.
    ``intervention``: the treated arm's intervention status
    (``RunEnvironment.check_intervention``); a fault excludes the episode.
    ``limited``: a provider's limit ended the episode, excluded as ``provider-limit``
    before any other rule (core/provider_limit.py): the limit, not the intervention or
    the task, is why it ended."""
    _same_task(planned, entry)
    identity = EpisodeIdentity(
        run_id=run_id,
        episode_id=planned.episode_id,
        pair_id=planned.pair_id,
        task_id=planned.task_id,
        arm=planned.arm,
        repetition=planned.repetition,
        order=planned.order,
        stratum=planned.stratum if stratum is None else stratum,
        quota_interval_id=planned.quota_interval,
        intervention=profile.intervention,
    )
    run = EpisodeOutcome(
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
    )
    grading = Grading(
        checks=collected.checks,
        exclusion=PROVIDER_LIMIT
        if limited
        else exclusion_for(
            started=outcome.exit_code is not None or outcome.timed_out,
            checks=collected.checks,
            rules=[r.when for r in suite.suite.exclusion_rules],
            intervention=intervention,
        ),
        intervention=intervention,
    )
    interval = QuotaInterval(quota.before, quota.after, quota.concurrent_use)
    evidence = DeliveryEvidence(ledger=collected.ledger, findings=collected.evidence)
    usage = recorded_usage(profile, requested_model, outcome, collected.usage)
    return build_episode_record(identity, run, usage, interval, grading, evidence)


def recorded_usage(
    profile: RunnerProfile, requested_model: str | None, outcome: RunOutcome, usage: EpisodeUsage
) -> RecordedUsage:
    """The usage part of the record: the model that answered most calls (else the one
    asked for, else the profile's), the reader's vector, priced with the catalog."""
    model = usage.primary_model or requested_model or profile.model
    list_price_usd, catalog_version = price_episode(
        profile, model, outcome.started_at, usage.vector, usage.api_calls
    )
    return RecordedUsage(
        client=profile.client,
        client_version=usage.cli_version or profile.version,
        model=model,
        session_id=usage.session_id,
        vector=usage.vector,
        api_calls=usage.api_calls,
        provenance=usage.provenance_counts(),
        cost_usd=usage.provider_reported_cost_usd,
        api_list_price_usd=list_price_usd,
        price_catalog_version=catalog_version,
    )


def _same_task(planned: PlannedEpisode, entry: TaskEntry) -> None:
    if entry.id != planned.task_id:  # a caller passed another episode's entry: a bug, not input
        raise ValueError(f"task entry {entry.id!r} given for planned task {planned.task_id!r}")
