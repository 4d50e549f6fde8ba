"""The version-1 comparison artifact (seed token-optimization-evaluation.txt, DESIGN 9).

Strict pydantic models: unknown fields are rejected at every level (which keeps
prompts, output, paths, secrets, prices and account identity out), identifiers
are 1–160 bytes of ``[A-Za-z0-9._:-]`` (no path separators), lists and numbers
are bounded. Nullable fields may be omitted and mean "not measured"; a missing
measurement is never zero. docs/compare-artifact.md documents every field.

Custom pydantic error types (``invalid_identifier``, ``invalid_intervention_manifest``,
``invalid_quota_observation``) let :mod:`pairlab.core.verdict.loading` map a
validation failure to its reason code.
"""

from __future__ import annotations

import re
from datetime import timedelta
from enum import StrEnum
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, AwareDatetime, Field, model_validator
from pydantic_core import PydanticCustomError

from pairlab.core.schemas.base import StrictModel
from pairlab.core.schemas.quota import Continuity, Window

MAX_ARTIFACT_BYTES: Final = 16 * 1024 * 1024  # larger files are refused before parsing
MAX_PAIRS: Final = 1_000
MAX_EVIDENCE_ITEMS: Final = 256  # fixtures, checks, reviews, findings, omissions per run
MAX_ASSIGNMENTS: Final = 8
MAX_TOKEN_VECTORS: Final = 8
MAX_QUOTA_INTERVALS: Final = 32
MAX_TOKENS: Final = 10**15
MAX_COUNT: Final = 1_000_000
MAX_LATENCY_MS: Final = 1e12

_IDENTIFIER = re.compile(r"[A-Za-z0-9._:-]{1,160}")


def check_identifier(value: str) -> str:
    if _IDENTIFIER.fullmatch(value) is None or set(value) == {"."}:
        raise PydanticCustomError(
            "invalid_identifier", "identifier must be 1-160 bytes of [A-Za-z0-9._:-]"
        )
    return value


Identifier = Annotated[str, AfterValidator(check_identifier)]
TokenCount = Annotated[int, Field(ge=0, le=MAX_TOKENS)]
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Milliseconds = Annotated[float, Field(ge=0, le=MAX_LATENCY_MS, allow_inf_nan=False)]
Percent = Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)]


class ChangedDimension(StrEnum):
    IMPLEMENTATION_REVISION = "implementation-revision"
    PROVIDER_ASSIGNMENT = "provider-assignment"
    MODEL_ASSIGNMENT = "model-assignment"
    EFFORT_ASSIGNMENT = "effort-assignment"


class InterventionManifest(StrictModel):
    id: Identifier
    baseline_revision: Identifier
    candidate_revision: Identifier
    changed_dimensions: list[ChangedDimension] = Field(min_length=1, max_length=4)

    @model_validator(mode="after")
    def _consistent(self) -> InterventionManifest:
        if len(set(self.changed_dimensions)) != len(self.changed_dimensions):
            raise PydanticCustomError(
                "invalid_intervention_manifest", "changed_dimensions lists a dimension twice"
            )
        declared = ChangedDimension.IMPLEMENTATION_REVISION in self.changed_dimensions
        if declared != (self.baseline_revision != self.candidate_revision):
            raise PydanticCustomError(
                "invalid_intervention_manifest",
                "implementation-revision must be declared exactly when the revisions differ",
            )
        return self


class Assignment(StrictModel):
    provider: Identifier
    model: Identifier
    effort: Identifier | None = None


class Acceptance(StrictModel):
    accepted: bool | None = None


class SemanticCompletion(StrictModel):
    passed: bool | None = None


class CheckStatus(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    MISSING = "missing"


class RequiredCheck(StrictModel):
    id: Identifier
    status: CheckStatus


ReviewResult = CheckStatus  # a review dimension's result takes the same three values


class ReviewDimension(StrictModel):
    id: Identifier
    independent: bool
    result: ReviewResult


class Severity(StrEnum):
    INFO = "info"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return list(Severity).index(self)


class UnresolvedFinding(StrictModel):
    id: Identifier
    severity: Severity


class Latency(StrictModel):
    critical_path_ms: Milliseconds | None = None
    notification_ms: Milliseconds | None = None


class Provenance(StrEnum):
    MEASURED_CANONICAL = "measured-canonical"
    DUPLICATE_EXACT = "duplicate-exact"
    AMBIGUOUS_CONFLICT = "ambiguous-conflict"
    FALLBACK_COVERAGE = "fallback-coverage"
    SYNTHETIC = "synthetic"
    UNKNOWN_USAGE = "unknown-usage"


class Accounting(StrictModel):
    provenance: Provenance


class ClaudeDimensions(StrictModel):
    """Claude's native normalized dimensions; composites are informational only."""

    fresh_input: TokenCount | None = None
    cache_read: TokenCount | None = None
    cache_write_5m: TokenCount | None = None
    cache_write_1h: TokenCount | None = None
    output: TokenCount | None = None
    # composites: carried for audit, never compared or added
    cache_creation_total: TokenCount | None = None
    total: TokenCount | None = None


class CodexDimensions(StrictModel):
    """Codex's native normalized dimensions; composites are informational only."""

    fresh_input: TokenCount | None = None
    cached_input: TokenCount | None = None
    output: TokenCount | None = None
    # composites: carried for audit, never compared or added (reasoning is inside output)
    input_total: TokenCount | None = None
    reasoning_output: TokenCount | None = None
    total: TokenCount | None = None


CLAUDE_PROXY_DIMENSIONS: Final = (
    "fresh_input",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
    "output",
)
CODEX_PROXY_DIMENSIONS: Final = ("fresh_input", "cached_input", "output")


class ClaudeTokenVector(StrictModel):
    provider: Literal["claude"]
    dimensions: ClaudeDimensions


class CodexTokenVector(StrictModel):
    provider: Literal["codex"]
    dimensions: CodexDimensions


TokenVector = Annotated[ClaudeTokenVector | CodexTokenVector, Field(discriminator="provider")]


def proxy_dimensions(vector: ClaudeTokenVector | CodexTokenVector) -> dict[str, int | None]:
    """The comparable native dimensions of a vector (composites left out)."""
    names = CLAUDE_PROXY_DIMENSIONS if vector.provider == "claude" else CODEX_PROXY_DIMENSIONS
    return {name: getattr(vector.dimensions, name) for name in names}


class QuotaPoint(StrictModel):
    observed_at: AwareDatetime
    used_percent: Percent | None = None
    resets_at: AwareDatetime | None = None
    reset_id: Identifier | None = None


class QuotaInterval(StrictModel):
    provider: Identifier
    window: Window
    start: QuotaPoint
    end: QuotaPoint
    continuity: Continuity
    unrelated_concurrent_use: bool | None = None
    precision_percent: Percent | None = None

    @model_validator(mode="after")
    def _ordered(self) -> QuotaInterval:
        if self.end.observed_at < self.start.observed_at:
            raise PydanticCustomError(
                "invalid_quota_observation", "the interval ends before it starts"
            )
        return self

    @property
    def duration(self) -> timedelta:
        return self.end.observed_at - self.start.observed_at


class Run(StrictModel):
    run_id: Identifier
    workload_id: Identifier
    fixture_ids: list[Identifier] = Field(min_length=1, max_length=MAX_EVIDENCE_ITEMS)
    source_input_revision: Identifier
    source_input_digest: Identifier
    environment_id: Identifier
    acceptance_contract_id: Identifier
    implementation_revision: Identifier
    assignments: list[Assignment] = Field(max_length=MAX_ASSIGNMENTS)
    acceptance: Acceptance
    semantic_completion: SemanticCompletion
    required_checks: list[RequiredCheck] = Field(max_length=MAX_EVIDENCE_ITEMS)
    review_dimensions: list[ReviewDimension] = Field(max_length=MAX_EVIDENCE_ITEMS)
    unresolved_findings: list[UnresolvedFinding] = Field(max_length=MAX_EVIDENCE_ITEMS)
    omitted_requirements: list[Identifier] = Field(max_length=MAX_EVIDENCE_ITEMS)
    retry_count: Count | None = None
    fix_count: Count | None = None
    latency: Latency
    accounting: Accounting | None = None
    token_vectors: list[TokenVector] = Field(max_length=MAX_TOKEN_VECTORS)
    quota_intervals: list[QuotaInterval] = Field(
        default_factory=list, max_length=MAX_QUOTA_INTERVALS
    )

    @property
    def providers(self) -> frozenset[str]:
        return frozenset(a.provider for a in self.assignments)


class Pair(StrictModel):
    work_unit_id: Identifier
    stratum: Identifier | None = None
    baseline: Run
    candidate: Run


class Artifact(StrictModel):
    schema_version: Literal[1]
    intervention: InterventionManifest
    pairs: list[Pair] = Field(max_length=MAX_PAIRS)
