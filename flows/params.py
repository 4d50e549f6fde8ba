"""Typed flow parameters: one pydantic model per flow, rendered as a form in the UI."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic.config import JsonDict

from flows.dispatch_params import DispatchParams
from pairlab.core.emulator.run_settings import EmulatorSettings
from pairlab.core.schemas.intervention_manifest import TreatedArm

Arm = Literal["baseline", "optimizer", "retrieval", "full"]


def _empty_is_unset(value: object) -> object:
    """A text field the form sent empty means "not set" (the field's None default)."""
    return None if isinstance(value, str) and not value.strip() else value


def _assertion(value: object) -> object:
    """The concurrent-use assertion: ``unknown``/``no``/``yes`` (the form's choices) or
    None/False/True (API callers, the command line) -> None/False/True."""
    choices: dict[str, bool | None] = {"unknown": None, "no": False, "yes": True}
    if isinstance(value, str) and value.strip().lower() in choices:
        return choices[value.strip().lower()]
    return value


# Tri-state, never a toggle: untouched it is *unknown* (quota consumption stays null), never
# an assertion that nothing else used the account. The form offers the three words.
ConcurrentUse = Annotated[
    bool | None,
    BeforeValidator(_assertion),
    Field(json_schema_extra={"form_choices": ["unknown", "no", "yes"]}),
]
STORE_DESCRIPTION = "Local directory or s3://bucket/prefix (required)"


def _named_store(store: str) -> str:
    """The store is required: an empty one would write into the serving process's cwd."""
    if not store.strip():
        raise ValueError("store is required: a local directory or s3://bucket/prefix")
    return store.strip()


def _none_is_default(value: object) -> object:
    """API callers may send ``null`` for the arms: the default (an empty list)."""
    return [] if value is None else value


# The eval's arms: an explicit list needs the baseline and one more arm; an empty one is the
# default (pairlab.core.intervention_wiring.planned_arms). The form's own check says so
# beside the field: the v1 UI keeps ``allOf`` as it is (flows/form_schema.py), and its
# ``if``/``then`` asks a non-empty list to contain the baseline -- "does not contain items
# matching" -- and to hold two arms. Not required in the form (``form_optional``).
ARMS_FORM_RULE: JsonDict = {
    "allOf": [{"if": {"minItems": 1}, "then": {"contains": {"const": "baseline"}, "minItems": 2}}],
    "form_optional": True,  # an emptied field, sent as missing, is the default too
}
ARMS_DESCRIPTION = (
    "Arms to run; baseline is required. Empty = the baseline and every arm the "
    "intervention supports (resolved when the run is planned and frozen with it: a resume "
    "keeps the run's arms)"
)


class WarmStratumParams(BaseModel):
    """Claim 4 (issue 18): a harvest session of ``harvest_task`` (full arm) writes findings;
    its graph, frozen and hashed, is carried into the warm stratum's retrieval/full arms.
    The suite's other tasks run in both strata, planned together, never pooled."""

    model_config = ConfigDict(extra="forbid")

    harvest_task: str = Field(min_length=1, description="Suite task the harvest session runs")


class EvidenceEvalParams(BaseModel):
    """A paired, order-rotated evaluation of the treatment arms against baseline."""

    model_config = ConfigDict(extra="forbid")

    suite: str = Field("core", description="Task suite id under catalog/suites/")
    task_filter: list[str] = Field(
        default_factory=list, description="Only these task ids (empty = every task of the suite)"
    )
    profile: str = Field("sim", description="Runner profile under runner_profiles/")
    intervention: str = Field(
        "reference",
        min_length=1,
        description="What the treated arms run: an id under interventions/ or a manifest's "
        "path (docs/interventions.md)",
    )
    model: str | None = Field(
        None, description="Model id passed to the CLI (profile default if empty)"
    )
    account: str | None = Field(
        None,
        description="A registered account (`pairlab account add`) the episodes run on: its "
        "credential and provider URL instead of the emulator; only its name, never a credential "
        "(empty = none, docs/accounts.md)",
    )
    budget_tokens: int | None = Field(
        None,
        ge=1,
        description="Approved ceiling in billed tokens: before each pair the run adds what it "
        "spent to what the next pair could spend and stops scheduling when that would cross "
        "it (budget-exhausted; resume with a higher one). Empty = no ceiling (docs/accounts.md)",
    )
    budget_window_percent: float | None = Field(
        None,
        ge=1,
        le=100,
        title="Budget window percent",
        description="Approved ceiling in percent of the account's subscription windows: before "
        "each pair the run reads the windows and stops scheduling when what it used since it "
        "started plus what the next pair could use would cross it (whole-percent readings "
        "counted at their upper bound; budget-exhausted; resume with a higher one). Not for an "
        "API-key account (no window). Empty = no ceiling (docs/accounts.md)",
    )
    repetitions: int = Field(
        5,
        ge=1,
        le=200,
        description="Pairs per task (5 passes the default gate; fewer than the gate: every "
        "cohort is insufficient by design)",
    )
    arms: Annotated[list[Arm], BeforeValidator(_none_is_default)] = Field(
        default_factory=list, description=ARMS_DESCRIPTION, json_schema_extra=ARMS_FORM_RULE
    )
    backend: Literal["local", "docker"] = Field("local", description="Where episodes run")
    include_transcript: bool = Field(
        False, description="Store prompt/stdout/stderr (hashes always)"
    )
    keep_workspaces: bool = Field(
        False, description="Keep episode volumes/directories for debugging"
    )
    min_pairs: int | None = Field(
        None,
        ge=2,
        description="Causal gate (default: TOKEN_OPTIMIZER_EVAL_MIN_PAIRS, else the study "
        "plan's minimum pairs); below the plan's minimum the analysis is exploratory",
    )
    study_plan: str | None = Field(
        None,
        description="Study plan file (default: `catalog/suites/<suite>.plan.yaml`, else the "
        "default plan); frozen when the run starts",
    )
    seed: int = Field(0, ge=0, description="Recorded seed for the schedule and the simulator")
    store: str = Field("pairlab-store", min_length=1, description=STORE_DESCRIPTION)
    on_secret: Literal["redact", "refuse"] = Field(
        "redact", description="Secrets found before publishing"
    )
    concurrency: int = Field(
        1,
        ge=1,
        le=32,
        description="Pairs run at the same time (above 1, episodes overlap on one account and "
        "every subscription-quota verdict is inconclusive)",
    )
    run_id: str | None = Field(None, description="Resume this run id (empty = new run)")
    work_dir: str = Field(".pairlab/work", description="Local working directory for run staging")
    dispatch: DispatchParams = Field(
        default_factory=DispatchParams,
        description="Scale-out: run pairs in this flow or on a work pool; per-account episode limit",
    )
    unrelated_concurrent_use: ConcurrentUse = Field(
        None,
        description=(
            "Operator assertion for a real account: did anything else use it during the run "
            "(unknown: quota consumption stays null; only no lets it count). Simulated "
            "accounts are judged by their own charge log."
        ),
    )
    quota_interval_episodes: int | None = Field(
        None,
        ge=1,
        le=200,
        description=(
            "Quota-aware schedule: each arm runs this many episodes back to back in one "
            "scheduled quota interval, so whole-percent windows can measure it (empty = off)"
        ),
    )
    quota_interval_s: float = Field(
        120.0,
        gt=0,
        le=86_400,
        description="Quota-aware schedule: length of each interval (must exceed its episodes)",
    )
    warm: WarmStratumParams | None = Field(
        None,
        description="Claim 4: plan a warm stratum beside the cold one (empty = cold only)",
    )
    holdout_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description=(
            "Retrieval holdouts: the seeded share of eligible findings withheld (ids and "
            "shadow tokens logged, never shown) in retrieval and full arms"
        ),
    )
    emulator: EmulatorSettings = Field(
        default_factory=EmulatorSettings,
        description=(
            "Advanced, for profiles that run against the provider emulator: injected faults, "
            "the scripted model's wrong-solution chance, the account's quota limits"
        ),
    )

    _unset_if_empty = field_validator("model", "account", "study_plan", "run_id", mode="before")(
        _empty_is_unset
    )

    @field_validator("arms")
    @classmethod
    def _baseline_included(cls, arms: list[Arm]) -> list[Arm]:
        """Empty = the default (resolved at plan time); a list given: as it is, checked."""
        if not arms:
            return arms
        if "baseline" not in arms:
            raise ValueError("arms must include baseline (every contrast is against it)")
        if len(arms) < 2:
            raise ValueError("arms must name a treated arm beside baseline (or none: default)")
        if len(set(arms)) != len(arms):
            raise ValueError("arms must not repeat an arm")
        return arms

    _store_named = field_validator("store")(_named_store)

    @model_validator(mode="after")
    def _warm_in_process(self) -> EvidenceEvalParams:
        if self.warm is not None and (
            self.dispatch.mode != "in-process" or self.quota_interval_episodes is not None
        ):
            raise ValueError("a warm stratum runs in-process, without quota intervals")
        return self

    @model_validator(mode="after")
    def _one_interval_at_a_time(self) -> EvidenceEvalParams:
        if self.quota_interval_episodes is not None and (
            self.concurrency != 1 or self.dispatch.mode != "in-process"
        ):
            raise ValueError(
                "quota intervals measure one account one interval at a time: "
                "use concurrency 1 and in-process dispatch"
            )
        return self


Stratum = Literal["cold", "warm"]
EffectDimension = Literal[
    "uncached_input", "cache_read", "cache_write_5m", "cache_write_1h", "output"
]

# The default candidate revision of the simulator trial: a genuinely cheaper
# implementation (every billed dimension lower), so a supported verdict is reachable.
CANDIDATE_V2_EFFECTS: dict[EffectDimension, float] = {
    "uncached_input": 0.4,
    "cache_read": 0.3,
    "cache_write_5m": 0.5,
    "cache_write_1h": 0.5,
    "output": 0.8,
}


def _both_strata() -> list[Stratum]:
    return ["cold", "warm"]


def _candidate_v2_effects() -> dict[EffectDimension, float]:
    return dict(CANDIDATE_V2_EFFECTS)


class CanaryTrialParams(BaseModel):
    """A paired baseline/candidate canary on frozen fixtures; waits for explicit approval."""

    model_config = ConfigDict(extra="forbid")

    suite: str = Field("core", description="Task suite id under catalog/suites/")
    task_filter: list[str] = Field(
        default_factory=lambda: ["fix-median", "config-production-cache"],
        min_length=1,
        description="The frozen workload: task ids of the suite",
    )
    profile: str = Field("sim", description="Runner profile under runner_profiles/")
    model: str | None = Field(None, description="Model assignment (profile default if empty)")
    effort: str | None = Field(None, description="Effort assignment, if the client has one")
    backend: Literal["local", "docker"] = Field("local", description="Where episodes run")
    strata: list[Stratum] = Field(
        default_factory=_both_strata,
        min_length=1,
        description="Pre-declared strata (never combined): cold = fresh graph; warm = graph pre-seeded",
    )
    repetitions: int = Field(
        2, ge=1, le=50, description="Pairs per task and stratum (AB/BA alternating)"
    )
    seed: int = Field(0, ge=0, description="Recorded seed for the AB/BA order and the simulator")
    intervention_id: str = Field("sim-candidate-v2", description="Name of the one intervention")
    baseline_revision: str = Field(
        "sim-effects:baseline", description="Baseline implementation revision"
    )
    candidate_revision: str = Field(
        "sim-effects:candidate-v2", description="Candidate implementation revision"
    )
    baseline_effects: dict[EffectDimension, float] = Field(
        default_factory=dict,
        description="Simulator: token effects of the baseline revision (1 = none)",
    )
    candidate_effects: dict[EffectDimension, float] = Field(
        default_factory=_candidate_v2_effects,
        description="Simulator: token effects of the candidate revision (<1 = fewer tokens)",
    )
    sim_solve_p: float = Field(
        1.0, ge=0, le=1, description="Simulator: probability an episode solves"
    )
    sim_ms_per_1k_tokens: float = Field(
        40.0,
        title="Sim wall time per 1k tokens (milliseconds)",
        ge=0,
        le=10_000,
        description="Simulator: wall time per 1,000 billed tokens (fewer tokens finish sooner)",
    )
    sim_five_hour_budget_tokens: int = Field(
        300_000, ge=1, description="Simulator: five-hour window budget of the trial's fresh account"
    )
    sim_seven_day_budget_tokens: int = Field(
        30_000_000,
        ge=1,
        description="Simulator: seven-day window budget of the trial's fresh account",
    )
    estimated_tokens_per_episode: int = Field(
        20_000,
        ge=1,
        description="Budget estimate shown before approval (billed tokens per episode)",
    )
    account: str | None = Field(
        None,
        description="A registered account (`pairlab account add`) a real-CLI profile's trial "
        "runs on: baseline = the stripped baseline arm, candidate = the intervention's "
        "treated arm; only its name, never a credential (empty = none: a simulator trial; "
        "docs/accounts.md)",
    )
    intervention: str = Field(
        "reference",
        min_length=1,
        description="Real CLI on an account: what the candidate runs, an id under "
        "interventions/ or a manifest's path (docs/interventions.md); the simulator's "
        "revisions ignore it",
    )
    treated_arm: TreatedArm | None = Field(
        None,
        description="Real CLI on an account: the intervention's treated arm the candidate "
        "runs, wired as the eval wires it (empty = its widest supported arm: full, else "
        "retrieval, else optimizer; resolved when the trial starts and frozen in its "
        "manifest)",
    )
    budget_tokens: int | None = Field(
        None,
        ge=1,
        description="Approved ceiling in billed tokens: before each AB/BA pair the trial adds "
        "what it spent to what the pair could spend and runs no further pair when that would "
        "cross it (judged and published on what ran; ends budget-exhausted; resume with the "
        "Run Id and a higher one). Empty = no ceiling (docs/accounts.md)",
    )
    budget_window_percent: float | None = Field(
        None,
        ge=1,
        le=100,
        title="Budget window percent",
        description="Approved ceiling in percent of the trial account's windows: before each "
        "AB/BA pair the trial reads them and runs no further pair when what it used plus "
        "what the pair could use would cross it (judged and published on what ran; ends "
        "budget-exhausted; resume with the Run Id and a higher one). Empty = no ceiling",
    )
    estimated_window_percent_per_episode: float | None = Field(
        None,
        gt=0,
        le=100,
        title="Estimated window percent per episode",
        description="Budget estimate for a window whose size in tokens is unknown (a real "
        "subscription): points of the window per episode, e.g. from an earlier run's quota "
        "intervals (empty = the share cannot be estimated)",
    )
    quota_interval_s: int = Field(
        4,
        ge=1,
        le=3600,
        description=(
            "Scheduled quota interval per run, whole seconds (must exceed run + grading; "
            "quota observations are timed in epoch seconds)"
        ),
    )
    unrelated_concurrent_use: ConcurrentUse = Field(
        None,
        description="Operator assertion: other use of the account during the trial (unknown "
        "unless you know)",
    )
    approval_timeout_s: int = Field(3600, ge=1, description="How long to wait for approval")
    review_dimensions: list[str] = Field(
        default_factory=lambda: ["grader-correctness"],
        min_length=1,
        description="Independent review dimensions (derived from the graders)",
    )
    store: str = Field("pairlab-store", min_length=1, description=STORE_DESCRIPTION)
    on_secret: Literal["redact", "refuse"] = Field(
        "redact", description="Secrets found before publishing"
    )
    run_id: str | None = Field(None, description="Resume this trial id (empty = new trial)")
    work_dir: str = Field(".pairlab/work", description="Local working directory for run staging")
    keep_workspaces: bool = Field(
        False, description="Keep episode volumes/directories for debugging"
    )

    _unset_if_empty = field_validator(
        "model",
        "effort",
        "run_id",
        "account",
        "budget_tokens",
        "estimated_window_percent_per_episode",
        "budget_window_percent",
        mode="before",
    )(_empty_is_unset)
    _store_named = field_validator("store")(_named_store)


class CompareArtifactParams(BaseModel):
    """Judge a loom version-1 comparison artifact offline (never changes anything)."""

    model_config = ConfigDict(extra="forbid")

    artifact_path: str = Field(description="Path of the artifact JSON (at most 16 MiB)")
