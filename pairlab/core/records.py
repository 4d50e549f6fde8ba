"""Building the episode record (schema v2) from what one episode produced.

Pure: the caller gathers the outcome, usage, checks, quota snapshots and the
concurrent-use assessment; this module only decides what goes into the record
(including the per-window quota consumption, :mod:`pairlab.core.quota.consumption`).
Missing measurements stay ``None``; transcripts are attached only when asked for,
hashes always.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime

from pairlab.core.quota.consumption import (
    UNKNOWN_CONCURRENT_USE,
    ConcurrentUse,
    interval_consumption,
)
from pairlab.core.schemas.episode import EpisodeRecord, GraderCheck, Transcript
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
    *, started: bool, checks: Sequence[GraderCheck], rules: Sequence[str]
) -> str | None:
    """Apply the suite's pre-registered exclusion rules; returns the rule kind or None."""
    if not started and "infrastructure-failure-before-start" in rules:
        return "infrastructure-failure-before-start"
    if any(c.passed is None for c in checks) and "grader-infrastructure-error" in rules:
        return "grader-infrastructure-error"
    return None


def build_episode_record(
    *,
    run_id: str,
    episode_id: str,
    pair_id: str,
    task_id: str,
    arm: str,
    repetition: int,
    order: int,
    stratum: str | None,
    client: str,
    client_version: str | None,
    model: str | None,
    model_version: str | None,
    session_id: str | None,
    backend: str,
    started_at: datetime | None,
    ended_at: datetime | None,
    exit_code: int | None,
    timed_out: bool,
    latency_ms: float | None,
    prompt: str,
    stdout: str,
    stderr: str,
    include_transcript: bool,
    usage: UsageVector | None,
    api_calls: int | None,
    usage_provenance: dict[str, int] | None,
    checks: Sequence[GraderCheck],
    exclusion: str | None,
    quota_before: list[QuotaObservation] | None,
    quota_after: list[QuotaObservation] | None,
    tool_calls: int | None = None,
    join_method: str | None = None,
    tool_call_id: str | None = None,
    delivered_tokens: int | None = None,
    cost_usd: float | None = None,
    api_list_price_usd: float | None = None,
    price_catalog_version: str | None = None,
    ledger: dict[str, int | None] | None = None,
    concurrent_use: ConcurrentUse = UNKNOWN_CONCURRENT_USE,
    quota_interval_id: str | None = None,
) -> EpisodeRecord:
    vector = usage or UsageVector()
    correct = is_correct(checks)
    observed = quota_before is not None or quota_after is not None
    consumption = (
        interval_consumption(quota_before, quota_after, concurrent_use.unrelated)
        if observed
        else None
    )
    return EpisodeRecord(
        episode_id=episode_id,
        session_id=session_id,
        tool_call_id=tool_call_id,
        client=client,
        client_version=client_version,
        model=model,
        model_version=model_version,
        task_id=task_id,
        pair_id=pair_id,
        arm=arm,
        delivered_tokens=delivered_tokens,
        success=None if exit_code is None else (exit_code == 0 and not timed_out),
        correct=correct,
        latency_ms=latency_ms,
        cost_usd=cost_usd,
        run_id=run_id,
        repetition=repetition,
        order=order,
        stratum=stratum,
        started_at=started_at,
        ended_at=ended_at,
        exit_code=exit_code,
        timed_out=timed_out,
        excluded=exclusion is not None,
        excluded_reason=exclusion,
        grader_checks=list(checks),
        tool_calls=tool_calls,
        api_calls=api_calls,
        prompt_sha256=sha256_text(prompt),
        stdout_sha256=sha256_text(stdout),
        stderr_sha256=sha256_text(stderr),
        usage_provenance=usage_provenance,
        join_method=join_method,  # type: ignore[arg-type]
        quota_before=quota_before,
        quota_after=quota_after,
        quota_consumption=consumption,
        unrelated_concurrent_quota_use=concurrent_use.unrelated,
        concurrent_use_basis=concurrent_use.basis,
        quota_interval_id=quota_interval_id,
        price_catalog_version=price_catalog_version,
        api_list_price_usd=api_list_price_usd,
        ledger=ledger,
        backend=backend,
        transcript=Transcript(prompt=prompt, stdout=stdout, stderr=stderr)
        if include_transcript
        else None,
        uncached_input_tokens=vector.uncached_input,
        cached_input_tokens=vector.cache_read,
        cache_write5m_tokens=vector.cache_write_5m,
        cache_write1h_tokens=vector.cache_write_1h,
        cache_write_tokens=vector.cache_write_generic,
        output_tokens=vector.output,
        reasoning_tokens=vector.reasoning,
        total_tokens=vector.total,
    )
