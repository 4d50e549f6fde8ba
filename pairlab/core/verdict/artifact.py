"""loom's version-1 comparison artifact, field for field (LOOM-ARTIFACT.md §1).

These models are the *decoding* step, as loom's serde types are: every object
rejects unknown keys and duplicate keys, integers reject floats, booleans and
negatives (``u16``/``u32``/``u64``/``i64`` bounds), numbers are finite, enums
take exactly loom's kebab-case values, and a missing or ``null`` optional field
means "unknown" (never zero). Anything that fails here is ``malformed-input``.

Identifiers, list bounds, token-vector relations and quota-observation bounds
are *not* decoding rules in loom: they are structural checks with their own
reason codes, made per pair by :mod:`pairlab.core.verdict.structure`, so that
one bad pair never hides the others. docs/compare-artifact.md documents it all.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Final

from pydantic import AfterValidator, Field, model_validator

from pairlab.core.schemas.base import StrictModel
from pairlab.core.schemas.quota import Continuity

MAX_ARTIFACT_BYTES: Final = 16 * 1024 * 1024  # larger files are refused before parsing
SCHEMA_VERSION: Final = 1
MAX_PAIRS: Final = 1_024
MAX_EVIDENCE_ITEMS: Final = 256  # assignments, checks, reviews, findings, omissions, quota
MAX_RETRIES_OR_FIXES: Final = 10_000
MAX_IDENTIFIER_BYTES: Final = 160
_IDENTIFIER_PUNCTUATION: Final = frozenset("-_.:")


def is_identifier(value: str) -> bool:
    """loom's ID rule: 1-160 bytes, each an ASCII letter or digit or one of ``- _ . :``."""
    return (
        0 < len(value) <= MAX_IDENTIFIER_BYTES
        and value.isascii()
        and all(c.isalnum() or c in _IDENTIFIER_PUNCTUATION for c in value)
    )


class DuplicateKeys(dict[str, Any]):
    """A decoded JSON object that named one key twice (see ``loading``).

    A struct refuses it (serde's derived structs fail on a repeated field); the
    ``provider_tokens`` map accepts it with the last value, as a serde map does.
    """


def _utf8(value: str) -> str:
    value.encode("utf-8")  # a lone surrogate escape is not a string in loom (UnicodeError)
    return value


Text = Annotated[str, AfterValidator(_utf8)]
U64_MAX: Final = 2**64 - 1
I64_MAX: Final = 2**63 - 1
U16 = Annotated[int, Field(ge=0, le=2**16 - 1)]
U32 = Annotated[int, Field(ge=0, le=2**32 - 1)]
U64 = Annotated[int, Field(ge=0, le=U64_MAX)]
I64 = Annotated[int, Field(ge=-I64_MAX - 1, le=I64_MAX)]
F64 = Annotated[float, Field(allow_inf_nan=False)]


class Provider(StrEnum):
    CLAUDE = "claude"
    CODEX = "codex"


class QuotaWindow(StrEnum):
    FIVE_HOUR = "five-hour"
    SEVEN_DAY = "seven-day"


class ChangedDimension(StrEnum):
    IMPLEMENTATION_REVISION = "implementation-revision"
    PROVIDER_ASSIGNMENT = "provider-assignment"
    MODEL_ASSIGNMENT = "model-assignment"
    EFFORT_ASSIGNMENT = "effort-assignment"


class EvidenceVerdict(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    UNKNOWN = "unknown"


class Severity(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return list(Severity).index(self)


class AccountingProvenance(StrEnum):
    MEASURED = "measured"
    PARTIAL = "partial"
    UNKNOWN = "unknown"


# Enum fields take their kebab-case value from decoded JSON (lax: the value, not an instance).
ProviderValue = Annotated[Provider, Field(strict=False)]
WindowValue = Annotated[QuotaWindow, Field(strict=False)]
DimensionValue = Annotated[ChangedDimension, Field(strict=False)]
VerdictValue = Annotated[EvidenceVerdict, Field(strict=False)]
SeverityValue = Annotated[Severity, Field(strict=False)]
ProvenanceValue = Annotated[AccountingProvenance, Field(strict=False)]
ContinuityValue = Annotated[Continuity, Field(strict=False)]
# (provider, window) in loom's evaluation order: claude-5h, claude-7d, codex-5h, codex-7d
QuotaKey = tuple[Provider, QuotaWindow]


class ArtifactModel(StrictModel):
    """A JSON object of the artifact: unknown or repeated keys are malformed."""

    @model_validator(mode="before")
    @classmethod
    def _no_repeated_keys(cls, data: Any) -> Any:
        if isinstance(data, DuplicateKeys):
            raise ValueError("an object names one key twice")
        return data


class Intervention(ArtifactModel):
    intervention_id: Text
    baseline_revision: Text
    candidate_revision: Text
    changed_dimensions: list[DimensionValue]


class Assignment(ArtifactModel):
    provider: ProviderValue
    model: Text
    effort: Text


class RequiredCheck(ArtifactModel):
    command_id: Text
    contract_id: Text
    verdict: VerdictValue


class ReviewedDimension(ArtifactModel):
    dimension: Text
    independent: bool
    verdict: VerdictValue


class UnresolvedFinding(ArtifactModel):
    finding_id: Text
    severity: SeverityValue


class TokenVector(ArtifactModel):
    """loom's ten provider-token dimensions; which ones are compared is tokens.py's rule."""

    input_tokens: U64 | None = None
    fresh_input_tokens: U64 | None = None
    cache_creation_input_tokens: U64 | None = None
    cache_read_input_tokens: U64 | None = None
    cache_write_5m_input_tokens: U64 | None = None
    cache_write_1h_input_tokens: U64 | None = None
    output_tokens: U64 | None = None
    thinking_output_tokens: U64 | None = None
    resident_input_tokens: U64 | None = None
    total_tokens: U64 | None = None


class QuotaObservation(ArtifactModel):
    """One run's interval on one (provider, window): its two endpoints and their context."""

    provider: ProviderValue
    window: WindowValue
    reset_id: Text
    resets_at: I64  # epoch seconds
    observed_start_at: I64
    observed_end_at: I64
    used_percent_start: F64
    used_percent_end: F64
    precision_percent: F64 | None = None
    unrelated_concurrent_use: bool | None = None
    continuity: ContinuityValue

    @property
    def key(self) -> QuotaKey:
        return (self.provider, self.window)

    @property
    def duration_s(self) -> int:
        return int(self.observed_end_at - self.observed_start_at)


class Run(ArtifactModel):
    run_id: Text
    workload_id: Text
    fixture_id: Text
    source_input_revision: Text
    source_input_digest: Text
    environment_id: Text
    acceptance_contract_digest: Text
    implementation_revision: Text
    assignments: list[Assignment]
    accepted: bool | None = None
    required_checks: list[RequiredCheck]
    reviewed_dimensions: list[ReviewedDimension]
    unresolved_findings: list[UnresolvedFinding]
    omitted_requirements: list[Text]
    retry_count: U32  # never used in any verdict
    fix_count: U32  # never used in any verdict
    semantic_completion: VerdictValue
    critical_path_ms: U64 | None = None
    notification_latency_ms: U64 | None = None
    accounting_complete: bool
    accounting_provenance: ProvenanceValue
    provider_tokens: dict[ProviderValue, TokenVector]
    quota_observations: list[QuotaObservation] | None = None

    @property
    def assigned_providers(self) -> frozenset[Provider]:
        return frozenset(a.provider for a in self.assignments)


class Pair(ArtifactModel):
    work_unit_id: Text
    baseline: Run
    candidate: Run


class Artifact(ArtifactModel):
    schema_version: U16
    intervention: Intervention
    pairs: list[Pair]
