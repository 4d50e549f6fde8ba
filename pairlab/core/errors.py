"""One exception tree for pairlab.

    PairlabError (reason: ReasonCode, exit_code)
    ├── InvalidInputError        exit 2  bad files, arguments, schemas
    ├── ExecutionError           exit 1  an episode could not be executed (infrastructure)
    ├── UsageParseError          exit 2  provider-native usage records could not be read
    ├── PublishError             exit 1  the object store refused or lost an object
    ├── EnvironmentUnavailable   exit 3  Docker, S3 or a Prefect server is not reachable,
    │                                    an account's credential is missing, or an
    │                                    episode could not reach the account's provider
    └── RunStopped               exit 4  a run stopped on purpose before its plan was done,
                                         by a rule the operator approved (the budget
                                         ceiling, core/budget.py): what ran is recorded
                                         and published; a resume continues it

Expected outcomes (a failed agent command, an insufficient cohort, Not priced, a
verdict) are values, never exceptions. Foreign errors are translated at the
boundary and chained (``raise InvalidInputError(...) from exc``). The CLI is the
one place that maps these to exit codes and ``--json`` reasons.
"""

from __future__ import annotations

from enum import StrEnum


class ReasonCode(StrEnum):
    INVALID_INPUT = "invalid-input"
    MALFORMED_INPUT = "malformed-input"
    INPUT_READ_FAILED = "input-read-failed"
    INPUT_TOO_LARGE = "input-too-large"
    OUTPUT_WRITE_FAILED = "output-write-failed"
    UNSUPPORTED_SCHEMA_VERSION = "unsupported-schema-version"
    MISSING_BASELINE_ISOLATION = "missing-baseline-isolation"
    MISSING_BASELINE_ARGS = "missing-baseline-args"
    INVALID_PROFILE = "invalid-profile"
    INVALID_CATALOG = "invalid-catalog"
    INVALID_MIN_PAIRS = "invalid-min-pairs"
    INVALID_PLAN = "invalid-plan"
    PLAN_CHANGED = "plan-changed"
    RESUME_CHANGED = "resume-changed"
    RESUME_DROPS_EPISODES = "resume-drops-episodes"
    INSUFFICIENT_PILOT = "insufficient-pilot"
    UNKNOWN_TASK = "unknown-task"
    UNKNOWN_PROFILE = "unknown-profile"
    # intervention manifests (interventions/<id>.yaml), refused before anything runs
    INVALID_INTERVENTION = "invalid-intervention"
    INTERVENTION_UNKNOWN_FIELD = "intervention-unknown-field"
    INTERVENTION_MISSING_COMMAND = "intervention-missing-command"
    INTERVENTION_UNPINNED = "intervention-unpinned-requirement"
    UNKNOWN_INTERVENTION = "unknown-intervention"
    # installing a pypi intervention (adapters/intervention_install), before any episode
    INTERVENTION_LOCK_MISSING = "intervention-lock-missing"
    INTERVENTION_LOCK_MISMATCH = "intervention-lock-mismatch"
    INTERVENTION_INSTALL_FAILED = "intervention-install-failed"
    ARM_NOT_SUPPORTED = "arm-not-supported"
    # a usage recipe against the server's real tools/list (core/recipe_check), before any episode
    RECIPE_UNKNOWN_TOOL = "recipe-unknown-tool"
    RECIPE_INVALID_ARGUMENTS = "recipe-invalid-arguments"
    # the server, started before the run to list its tools, gave no tools/list answer
    INTERVENTION_START_FAILED = "intervention-start-failed"
    EXECUTION_FAILED = "execution-failed"
    USAGE_UNREADABLE = "usage-unreadable"
    PUBLISH_FAILED = "publish-failed"
    INTEGRITY_FAILED = "integrity-failed"
    RUN_INCOMPLETE = "run-incomplete"
    SECRET_FOUND = "secret-found"
    ENVIRONMENT_UNAVAILABLE = "environment-unavailable"
    DOCKER_UNAVAILABLE = "docker-unavailable"
    BUILD_PREREQUISITE_MISSING = "build-prerequisite-missing"
    STACK_UNHEALTHY = "stack-unhealthy"
    S3_UNAVAILABLE = "s3-unavailable"
    PREFECT_UNAVAILABLE = "prefect-unavailable"
    CERTIFICATION_FAILED = "certification-failed"
    NOT_FOUND = "not-found"
    TOKENIZER_UNAVAILABLE = "tokenizer-unavailable"
    CLI_UNAVAILABLE = "cli-unavailable"
    INVALID_PRICE_CATALOG = "invalid-price-catalog"
    LEDGER_UNREADABLE = "ledger-unreadable"
    # accounts (pairlab account ...; core/accounts.py)
    ACCOUNT_UNKNOWN = "account-unknown"
    ACCOUNT_EXISTS = "account-exists"
    INVALID_ACCOUNT = "invalid-account"
    CREDENTIAL_MISSING = "credential-missing"
    CREDENTIAL_MALFORMED = "credential-malformed"
    CREDENTIAL_REJECTED = "credential-rejected"
    CREDENTIAL_STORE_INSECURE = "credential-store-insecure"
    CREDENTIAL_IN_PARAMETER = "credential-in-parameter"
    # the provider's TLS certificate is not trusted (a gateway's private CA not declared)
    PROVIDER_TLS_UNTRUSTED = "provider-tls-untrusted"
    INVALID_CA_BUNDLE = "invalid-ca-bundle"
    # an account's episode reached no provider (adapters/accounts/unreachable): the run stops
    PROVIDER_UNREACHABLE = "provider-unreachable"
    # a percent-of-window ceiling on an account that has no subscription window (an API key)
    NO_SUBSCRIPTION_WINDOW = "no-subscription-window"
    # a run's approved ceiling (core/budget.py): stopped scheduling, resumable
    BUDGET_EXHAUSTED = "budget-exhausted"


class PairlabError(Exception):
    """Root of every error pairlab raises on purpose."""

    exit_code: int = 1
    default_reason: ReasonCode = ReasonCode.INVALID_INPUT

    def __init__(self, message: str, *, reason: ReasonCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason: ReasonCode = reason or self.default_reason

    def to_json(self) -> dict[str, object]:
        return {"error": self.message, "reason_code": str(self.reason), "exit_code": self.exit_code}


class InvalidInputError(PairlabError):
    exit_code = 2
    default_reason = ReasonCode.INVALID_INPUT


class ExecutionError(PairlabError):
    exit_code = 1
    default_reason = ReasonCode.EXECUTION_FAILED


class UsageParseError(PairlabError):
    exit_code = 2
    default_reason = ReasonCode.USAGE_UNREADABLE


class PublishError(PairlabError):
    exit_code = 1
    default_reason = ReasonCode.PUBLISH_FAILED


class EnvironmentUnavailable(PairlabError):
    exit_code = 3
    default_reason = ReasonCode.ENVIRONMENT_UNAVAILABLE


class RunStopped(PairlabError):
    """A run stopped on purpose; ``details`` (the run's summary) joins its ``--json``."""

    exit_code = 4
    default_reason = ReasonCode.BUDGET_EXHAUSTED

    def __init__(
        self,
        message: str,
        *,
        reason: ReasonCode | None = None,
        details: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message, reason=reason)
        self.details = dict(details or {})

    def to_json(self) -> dict[str, object]:
        return {**self.details, **super().to_json()}
