"""The study plan: what a run pre-registers before its first episode (DESIGN 7).

A plan names the primary metric of each primary contrast, the minimum pairs
(the pre-registered, powered sample size), alpha, the secondary metrics and
their multiplicity correction. It lives beside its suite as
``catalog/suites/<suite>.plan.yaml`` (schema below, version 1); a suite without
one uses :func:`default_plan`. The resolved plan is frozen into the run
directory (``plan.json``) when the run starts and its SHA-256 goes into the run
manifest; a resumed run whose plan changed is refused (``plan-changed``).

Decision rule (applied per cohort by :mod:`pairlab.core.analysis.decisions`):

* primary family: the plan's (contrast, metric) tests; Holm across them at
  ``alpha`` on the decision interval's two-sided p-values. With one primary
  contrast this is exactly "the decision interval at ``alpha`` excludes zero".
* secondary family: every other tested (contrast, metric) of the cohort whose
  metric is a secondary metric (the primary metric on non-primary contrasts
  included), adjusted with Holm (or Benjamini-Hochberg) at ``alpha``. The
  subscription windows' consumption (``quotaFiveHourConsumptionPct``,
  ``quotaSevenDayConsumptionPct``) is analysed separately (its own units: the
  quota intervals), so its tests form their own families under the same rule.
* a win also needs the gate and non-regressed correctness (seed).

Pure: models, YAML/JSON parsing, the default plan and the canonical hash.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from pairlab.core.analysis.metrics import METRICS
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.quota.consumption import QUOTA_METRICS
from pairlab.core.schemas.base import StrictModel
from pairlab.core.schemas.episode import ARMS
from pairlab.core.stats.multiplicity import Correction

PLAN_SCHEMA_VERSION = 1
PLAN_SUFFIX = ".plan.yaml"
FROZEN_PLAN_NAME = "plan.json"
DEFAULT_PLAN_ID = "default"
DEFAULT_ALPHA = 0.05
DEFAULT_PRIMARY_METRIC = "totalTokens"
LADDER_CONTRASTS = ("retrieval-vs-optimizer", "full-vs-retrieval")
TREATMENT_CONTRASTS = tuple(f"{arm}-vs-baseline" for arm in ARMS if arm != "baseline")
KNOWN_CONTRASTS = (*TREATMENT_CONTRASTS, *LADDER_CONTRASTS)
PlanSource = Literal["file", "default"]
# What a plan may name: the token analysis's metrics and the subscription windows'
# consumption (pairlab.core.subscription analyses those with the same rule).
PLANNABLE_METRICS = (*METRICS, *QUOTA_METRICS)


def _check_metric(name: str) -> str:
    if name not in PLANNABLE_METRICS:
        raise ValueError(f"unknown metric {name!r} (one of: {', '.join(PLANNABLE_METRICS)})")
    return name


def _check_contrast(name: str) -> str:
    if name not in KNOWN_CONTRASTS:
        raise ValueError(f"unknown contrast {name!r} (one of: {', '.join(KNOWN_CONTRASTS)})")
    return name


class PowerTarget(StrictModel):
    """What ``min_pairs`` was powered for (recorded; ``pairlab power`` computes it)."""

    effect: str = Field(
        min_length=1,
        description="the saving to detect: a percentage of the control mean ('-10%') or an absolute value",
    )
    power: float = Field(gt=0, lt=1)
    pilot: str | None = Field(None, description="where the variance came from (a pilot run id)")


class StudyPlan(StrictModel):
    """A pre-registered study plan (``catalog/suites/<suite>.plan.yaml``, schema version 1)."""

    schema_version: Literal[1] = 1
    id: str = Field(min_length=1, max_length=120)
    description: str | None = None
    alpha: float = Field(DEFAULT_ALPHA, gt=0, le=0.2)
    min_pairs: int = Field(ge=2, le=100_000)
    primary_metric: str = DEFAULT_PRIMARY_METRIC
    primary_metric_by_contrast: dict[str, str] = Field(default_factory=dict)
    primary_contrasts: list[str] = Field(default_factory=lambda: list(TREATMENT_CONTRASTS))
    secondary_metrics: list[str] = Field(default_factory=lambda: list(PLANNABLE_METRICS))
    secondary_correction: Correction = "holm"
    power: PowerTarget | None = None

    @field_validator("primary_metric")
    @classmethod
    def _primary_metric(cls, value: str) -> str:
        return _check_metric(value)

    @field_validator("primary_contrasts")
    @classmethod
    def _contrasts(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("a plan needs at least one primary contrast")
        if len(set(value)) != len(value):
            raise ValueError("primary contrasts are listed twice")
        return [_check_contrast(c) for c in value]

    @field_validator("secondary_metrics")
    @classmethod
    def _secondary(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("secondary metrics are listed twice")
        return [_check_metric(m) for m in value]

    @field_validator("primary_metric_by_contrast")
    @classmethod
    def _by_contrast(cls, value: dict[str, str]) -> dict[str, str]:
        return {_check_contrast(c): _check_metric(m) for c, m in value.items()}

    @model_validator(mode="after")
    def _overrides_name_primary_contrasts(self) -> StudyPlan:
        extra = set(self.primary_metric_by_contrast) - set(self.primary_contrasts)
        if extra:
            raise ValueError(
                f"primary_metric_by_contrast names contrasts that are not primary: {sorted(extra)}"
            )
        return self

    def primary_metric_of(self, contrast: str) -> str | None:
        """The primary metric of ``contrast``, None when the contrast is not primary."""
        if contrast not in self.primary_contrasts:
            return None
        return self.primary_metric_by_contrast.get(contrast, self.primary_metric)

    def canonical_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    def sha256(self) -> str:
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()


class ResolvedPlan(StrictModel):
    """A plan as a run uses it: the plan, where it came from, its hash (``plan.json``)."""

    plan: StudyPlan
    source: PlanSource
    path: str | None = None
    sha256: str

    @classmethod
    def of(cls, plan: StudyPlan, source: PlanSource, path: str | None = None) -> ResolvedPlan:
        return cls(plan=plan, source=source, path=path, sha256=plan.sha256())

    def summary(self) -> dict[str, Any]:
        """The plan as the analysis JSON and the manifest carry it."""
        return {
            "id": self.plan.id,
            "source": self.source,
            "path": self.path,
            "sha256": self.sha256,
            **self.plan.model_dump(mode="json"),
        }


def default_plan(min_pairs: int) -> StudyPlan:
    """The plan of a suite without a plan file: totalTokens on each treatment vs baseline,
    every metric (quota consumption included) secondary (Holm), alpha 0.05, ``min_pairs`` from the seed's gate
    ($TOKEN_OPTIMIZER_EVAL_MIN_PAIRS, else 5)."""
    return StudyPlan(
        id=DEFAULT_PLAN_ID,
        description=(
            "Default plan (no plan file): primary totalTokens on every treatment vs baseline "
            "(Holm across them), every metric secondary with Holm, alpha 0.05"
        ),
        min_pairs=min_pairs,
    )


def plan_path(catalog_dir: Path, suite_id: str) -> Path:
    return catalog_dir / "suites" / f"{suite_id}{PLAN_SUFFIX}"


def parse_plan(data: object, source: str) -> StudyPlan:
    if isinstance(data, dict) and data.get("schema_version", PLAN_SCHEMA_VERSION) != (
        PLAN_SCHEMA_VERSION
    ):
        raise InvalidInputError(
            f"{source}: unsupported study plan schema_version {data.get('schema_version')!r}",
            reason=ReasonCode.UNSUPPORTED_SCHEMA_VERSION,
        )
    try:
        return StudyPlan.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "plan"
        raise InvalidInputError(
            f"{source}: invalid study plan: {loc}: {first['msg']}",
            reason=ReasonCode.INVALID_PLAN,
        ) from exc


def load_plan_file(path: Path) -> StudyPlan:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InvalidInputError(f"{path}: no such study plan", reason=ReasonCode.NOT_FOUND) from exc
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InvalidInputError(
            f"{path}: cannot read the study plan: {exc}", reason=ReasonCode.INPUT_READ_FAILED
        ) from exc
    return parse_plan(data, str(path))


def resolve_plan(
    explicit: Path | None, suite_plan: Path | None, default_min_pairs: int
) -> ResolvedPlan:
    """The plan a run uses: ``explicit``, else the suite's plan file when it exists,
    else :func:`default_plan`."""
    if explicit is not None:
        return ResolvedPlan.of(load_plan_file(explicit), "file", str(explicit))
    if suite_plan is not None and suite_plan.is_file():
        return ResolvedPlan.of(load_plan_file(suite_plan), "file", str(suite_plan))
    return ResolvedPlan.of(default_plan(default_min_pairs), "default")


def read_frozen_plan(path: Path) -> ResolvedPlan:
    """``plan.json`` of a run directory (as written by :func:`frozen_plan_bytes`)."""
    try:
        payload = json.loads(path.read_bytes())
        resolved = ResolvedPlan.model_validate(payload)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValidationError) as exc:
        raise InvalidInputError(
            f"{path}: unreadable frozen study plan ({exc.__class__.__name__})",
            reason=ReasonCode.INVALID_PLAN,
        ) from exc
    if resolved.plan.sha256() != resolved.sha256:
        raise InvalidInputError(
            f"{path}: the frozen study plan does not match its recorded sha256 "
            "(edited after the run started)",
            reason=ReasonCode.PLAN_CHANGED,
        )
    return resolved


def frozen_plan_bytes(resolved: ResolvedPlan) -> bytes:
    return (json.dumps(resolved.model_dump(mode="json"), indent=2, sort_keys=True) + "\n").encode()


def check_unchanged(frozen: ResolvedPlan, current: ResolvedPlan, run_id: str) -> None:
    """Refuse a resumed run whose plan differs from the one frozen when it started."""
    if frozen.sha256 == current.sha256:
        return
    before, after = frozen.plan.model_dump(mode="json"), current.plan.model_dump(mode="json")
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    raise InvalidInputError(
        f"run {run_id} started with study plan {frozen.plan.id!r} ({frozen.source}, sha256 "
        f"{frozen.sha256[:12]}) and the plan now resolves to {current.plan.id!r} "
        f"({current.source}, sha256 {current.sha256[:12]}); changed: {', '.join(changed)}. "
        "A pre-registered plan cannot change after the run started: restore it, or start a "
        "new run",
        reason=ReasonCode.PLAN_CHANGED,
    )
