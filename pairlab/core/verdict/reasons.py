"""The comparison reason codes: loom's vocabulary (DESIGN 9), exactly that list.

Every code the verdict engine or ``pairlab compare`` can emit is a member of
:class:`VerdictReason`. Codes are kebab-case; reports list them sorted and
de-duplicated (:func:`sorted_codes`), at pair level and at top level.

Two codes are part of loom's vocabulary but, as in loom, can never be emitted:
``missing-provider-token-vector`` (complete accounting already requires one
vector per assigned provider, and a pair needs an assignment to be compared)
and ``quota-reduction-not-established`` (no interval set can end supported
without a reduction). They stay so that the vocabulary is loom's.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class VerdictReason(StrEnum):
    # input and artifact structure (the whole artifact is inconclusive, exit 2)
    COMPARISON_SELECTION_CONFLICT = "comparison-selection-conflict"
    INPUT_READ_FAILED = "input-read-failed"
    INPUT_TOO_LARGE = "input-too-large"
    MALFORMED_INPUT = "malformed-input"
    UNSUPPORTED_SCHEMA_VERSION = "unsupported-schema-version"
    NO_COMPARISON_PAIRS = "no-comparison-pairs"
    PAIR_LIMIT_EXCEEDED = "pair-limit-exceeded"
    INVALID_IDENTIFIER = "invalid-identifier"
    INVALID_INTERVENTION_MANIFEST = "invalid-intervention-manifest"
    EVIDENCE_LIMIT_EXCEEDED = "evidence-limit-exceeded"
    DUPLICATE_RUN_ID = "duplicate-run-id"
    REVISION_MANIFEST_MISMATCH = "revision-manifest-mismatch"
    MISSING_PROVIDER_ASSIGNMENT = "missing-provider-assignment"
    DUPLICATE_PROVIDER_ASSIGNMENT = "duplicate-provider-assignment"
    DUPLICATE_EVIDENCE_IDENTITY = "duplicate-evidence-identity"
    PROVIDER_EVIDENCE_MISMATCH = "provider-evidence-mismatch"
    INVALID_TOKEN_VECTOR = "invalid-token-vector"
    INVALID_QUOTA_OBSERVATION = "invalid-quota-observation"
    # comparability
    INCOMPARABLE_PAIR = "incomparable-pair"
    INCOMPARABLE_WORKLOAD = "incomparable-workload"
    INCOMPARABLE_SOURCE_INPUT = "incomparable-source-input"
    INCOMPARABLE_ENVIRONMENT = "incomparable-environment"
    INCOMPARABLE_ACCEPTANCE_CONTRACT = "incomparable-acceptance-contract"
    MODEL_EFFORT_MISMATCH = "model-effort-mismatch"
    # quality
    CANDIDATE_NOT_ACCEPTED = "candidate-not-accepted"
    SEMANTIC_COMPLETION_FAILED = "semantic-completion-failed"
    MISSING_QUALITY_EVIDENCE = "missing-quality-evidence"
    WEAKENED_VERIFICATION = "weakened-verification"
    FAILED_REQUIRED_CHECK = "failed-required-check"
    WEAKENED_REVIEW = "weakened-review"
    FAILED_REVIEW = "failed-review"
    NEW_UNRESOLVED_FINDING = "new-unresolved-finding"
    WORSENED_UNRESOLVED_FINDING = "worsened-unresolved-finding"
    OMITTED_REQUIREMENT = "omitted-requirement"
    BASELINE_QUALITY_INCOMPLETE = "baseline-quality-incomplete"
    # latency
    MISSING_LATENCY_EVIDENCE = "missing-latency-evidence"
    CRITICAL_PATH_REGRESSION = "critical-path-regression"
    NOTIFICATION_LATENCY_REGRESSION = "notification-latency-regression"
    # token proxy
    MISSING_ACCOUNTING_EVIDENCE = "missing-accounting-evidence"
    MISSING_PROVIDER_TOKEN_VECTOR = "missing-provider-token-vector"
    CROSS_PROVIDER_TRANSFER = "cross-provider-transfer"
    MISSING_TOKEN_DIMENSION = "missing-token-dimension"
    TOKEN_PROXY_REGRESSION = "token-proxy-regression"
    TOKEN_DIMENSION_TRADEOFF = "token-dimension-tradeoff"
    NO_TOKEN_PROXY_REDUCTION = "no-token-proxy-reduction"
    # subscription quota
    MISSING_QUOTA_TELEMETRY = "missing-quota-telemetry"
    MISSING_QUOTA_WINDOW = "missing-quota-window"
    QUOTA_INTERVAL_MISMATCH = "quota-interval-mismatch"
    QUOTA_RESET_CROSSING = "quota-reset-crossing"
    UNRELATED_CONCURRENT_QUOTA_USE = "unrelated-concurrent-quota-use"
    UNKNOWN_QUOTA_PRECISION = "unknown-quota-precision"
    SAME_RESET_UTILIZATION_DECREASE = "same-reset-utilization-decrease"
    SUBSCRIPTION_CONSUMPTION_REGRESSION = "subscription-consumption-regression"
    QUOTA_CHANGE_WITHIN_UNCERTAINTY = "quota-change-within-uncertainty"
    QUOTA_REDUCTION_NOT_ESTABLISHED = "quota-reduction-not-established"


def sorted_codes(codes: Iterable[VerdictReason]) -> list[str]:
    """Kebab-case strings, sorted and de-duplicated (the report form)."""
    return sorted({str(code) for code in codes})
