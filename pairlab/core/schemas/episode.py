"""Episode record, schema version 2 (DESIGN 5.1).

camelCase on the wire, as in the seed; ``None`` (JSON ``null``) means *not
observed* and is never turned into 0. Records from other producers may carry only
the seed's fields: everything beyond the identity fields is optional on read.
The subscription quota fields (``quotaConsumption``, ``unrelatedConcurrentQuotaUse``,
``concurrentUseBasis``, ``quotaIntervalId``) are documented in docs/episode-record.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, ValidationError

from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.base import CamelModel
from pairlab.core.schemas.quota import QuotaConsumption, QuotaObservation
from pairlab.core.schemas.usage import UsageVector

EPISODE_SCHEMA_VERSION = 2
ARMS: tuple[str, ...] = ("baseline", "optimizer", "retrieval", "full")
# How an episode's "unrelated concurrent quota use" was established: the simulator's or the
# provider emulator's account charge log (ground truth) or the operator's assertion in the
# run parameters.
ConcurrentUseBasis = Literal["simulator-charge-log", "emulator-charge-log", "operator-assertion"]


InterventionStatusWord = Literal[
    "loaded",
    "intervention-start-failed",
    "intervention-timeout",
    "intervention-exited",
    "intervention-not-loaded",
]


def make_pair_id(run_id: str, task_id: str, repetition: int) -> str:
    """``<runId>:<taskId>:<repetition>``: two eval runs never share a pairId."""
    return f"{run_id}:{task_id}:{repetition}"


def make_episode_id(pair_id: str, arm: str) -> str:
    return f"{pair_id}:{arm}"


class GraderCheck(CamelModel):
    name: str
    kind: str
    passed: bool | None
    detail: str | None = None


class Transcript(CamelModel):
    prompt: str | None = None
    stdout: str | None = None
    stderr: str | None = None


class InterventionTools(CamelModel):
    """The intervention's tool calls in a treated episode (issue 26 item 6): ``calls`` and
    ``errors`` as the CLI's transcript tells them, ``oversized`` -- results the CLI sent
    the model cut (refused, persisted with a preview, truncated) -- from the emulator's
    ledger. Null: that source was not read (never 0). The episode stays graded as it
    ended: these are the intervention's behaviour (core/intervention_health.py)."""

    calls: int | None = Field(default=None, ge=0)
    errors: int | None = Field(default=None, ge=0)
    oversized: int | None = Field(default=None, ge=0)


class EpisodeRecord(CamelModel):
    schema_version: Literal[2] = 2
    # --- the seed's fields -------------------------------------------------
    episode_id: str = Field(min_length=1)
    session_id: str | None = None
    turn_id: str | None = None
    tool_call_id: str | None = None
    injection_id: str | None = None
    client: str = Field(min_length=1)
    client_version: str | None = None
    model: str | None = None
    model_version: str | None = None
    task_id: str = Field(min_length=1)
    pair_id: str = Field(min_length=1)
    arm: str = Field(min_length=1)
    finding_ids: list[str] = Field(default_factory=list)
    shadow_finding_ids: list[str] = Field(default_factory=list)
    delivered_tokens: int | None = Field(default=None, ge=0)
    shadow_tokens: int | None = Field(default=None, ge=0)
    success: bool | None = None
    correct: bool | None = None
    latency_ms: float | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)
    uncached_input_tokens: int | None = Field(default=None, ge=0)
    cached_input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    total_tokens: int | None = Field(default=None, ge=0)
    # --- pairlab's additions (all optional on read) ------------------------
    run_id: str | None = None
    repetition: int | None = Field(default=None, ge=0)
    order: int | None = Field(default=None, ge=0)
    stratum: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    exit_code: int | None = None
    timed_out: bool | None = None
    excluded: bool = False
    excluded_reason: str | None = None
    grader_checks: list[GraderCheck] | None = None
    cache_write5m_tokens: int | None = Field(default=None, ge=0, alias="cacheWrite5mTokens")
    cache_write1h_tokens: int | None = Field(default=None, ge=0, alias="cacheWrite1hTokens")
    cache_write_tokens: int | None = Field(default=None, ge=0)
    reasoning_tokens: int | None = Field(default=None, ge=0)
    tool_calls: int | None = Field(default=None, ge=0)
    api_calls: int | None = Field(default=None, ge=0)
    prompt_sha256: str | None = None
    stdout_sha256: str | None = None
    stderr_sha256: str | None = None
    usage_provenance: dict[str, int] | None = None
    # issue 18: exact = every MCP call's client tool-call id found in the CLI's transcript;
    # fallback (labelled, with its reason) = the episode/anchor join; none = no MCP call
    join_method: Literal["exact", "fallback", "none"] | None = None
    join_fallback_reason: str | None = None
    mcp_tool_calls: int | None = Field(default=None, ge=0)
    # issue 18: stale-when-delivered ids, harmful ratings, quarantines, writes, refusals
    finding_evidence: dict[str, Any] | None = None
    quota_before: list[QuotaObservation] | None = None
    quota_after: list[QuotaObservation] | None = None
    # issue 16: per-window consumption over [quotaBefore, quotaAfter] (null + reason when
    # unusable), whether anything else used the account meanwhile (None = unknown) and on
    # what basis, and the scheduled quota interval the episode ran in (quota-aware plans).
    quota_consumption: list[QuotaConsumption] | None = None
    unrelated_concurrent_quota_use: bool | None = None
    concurrent_use_basis: ConcurrentUseBasis | None = None
    quota_interval_id: str | None = None
    price_catalog_version: str | None = None
    api_list_price_usd: float | None = Field(default=None, ge=0)
    ledger: dict[str, int | None] | None = None
    backend: str | None = None
    transcript: Transcript | None = None
    # issue 26: the run's intervention (interventions/<id>.yaml), on every arm's record
    # (the baseline's too: the pair it belongs to); null on records written before
    intervention_id: str | None = None
    intervention_version: str | None = None
    intervention_manifest_sha256: str | None = None
    # issue 26 item 6: whether a treated episode's intervention was there (loaded) or why
    # not (core/intervention_health.py; any other status excludes the episode, its
    # excludedReason); null on the baseline, when nothing was observed, and before
    intervention_status: InterventionStatusWord | None = None
    intervention_detail: str | None = None
    # issue 26 item 6: its tool calls, errors and oversized results (null before)
    intervention_tools: InterventionTools | None = None
    # issue 26 item 5: per model request (in order), the cl100k tokens the request carried
    # of the intervention's server (its tool definitions, or the lines naming it while the
    # CLI defers them; 0: nothing), from the emulator's ledger. Null on the baseline,
    # without the emulator, and before
    intervention_definition_tokens: list[int] | None = None

    @property
    def intervention_key(self) -> str | None:
        """The cohort key's ``intervention``: ``id@version:<first 12 hex of the manifest
        hash>`` (cohorts are never pooled across interventions); None when unrecorded."""
        if self.intervention_id is None:
            return None
        sha = (self.intervention_manifest_sha256 or "unknown")[:12]
        return f"{self.intervention_id}@{self.intervention_version or 'unknown'}:{sha}"

    def usage_vector(self) -> UsageVector:
        return UsageVector(
            uncached_input=self.uncached_input_tokens,
            cache_read=self.cached_input_tokens,
            cache_write_5m=self.cache_write5m_tokens,
            cache_write_1h=self.cache_write1h_tokens,
            cache_write_generic=self.cache_write_tokens,
            output=self.output_tokens,
            reasoning=self.reasoning_tokens,
        )

    def to_json_line(self) -> str:
        return self.model_dump_json(by_alias=True)


_validate_json: Callable[[str], EpisodeRecord] = EpisodeRecord.__pydantic_validator__.validate_json


def parse_episode_line(line: str, line_no: int, source: str = "<input>") -> EpisodeRecord:
    """Parse one JSONL line; a bad line is an error naming the line, never skipped.

    Validated in one pass (``model_validate_json``'s validator, called directly: a
    million lines spent ~1 s in the wrapper); only a line that fails is parsed again
    to say why (not JSON, not an object, an unsupported schemaVersion, or the first
    invalid field)."""
    try:
        return _validate_json(line)
    except ValidationError as exc:
        failure = exc
    try:
        payload = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"{source}:{line_no}: not valid JSON ({exc.msg})", reason=ReasonCode.MALFORMED_INPUT
        ) from exc
    if not isinstance(payload, dict):
        raise InvalidInputError(
            f"{source}:{line_no}: an episode record must be a JSON object",
            reason=ReasonCode.MALFORMED_INPUT,
        )
    version = payload.get("schemaVersion", EPISODE_SCHEMA_VERSION)
    if version != EPISODE_SCHEMA_VERSION:
        raise InvalidInputError(
            f"{source}:{line_no}: unsupported schemaVersion {version!r} (expected 2)",
            reason=ReasonCode.UNSUPPORTED_SCHEMA_VERSION,
        )
    first = failure.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    raise InvalidInputError(
        f"{source}:{line_no}: invalid episode record: {loc}: {first['msg']}",
        reason=ReasonCode.MALFORMED_INPUT,
    ) from failure


def iter_episode_lines(
    lines: Iterable[str], source: str = "<input>", first_line: int = 1
) -> Iterator[EpisodeRecord]:
    """Each non-blank line validated (:func:`parse_episode_line`), numbered from
    ``first_line`` (blank lines count)."""
    parse = parse_episode_line
    for line_no, line in enumerate(lines, start=first_line):
        if line.strip():
            yield parse(line, line_no, source)
