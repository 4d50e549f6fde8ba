"""A run's report as a pure function of what the run stored (issue 16, item 5).

Stored inputs: ``run.json`` (:class:`RunSettings`: the parameters the report
names and the analysis settings), ``plan.json`` (the frozen study plan),
``episodes.jsonl`` and, for quota-aware runs, ``quota-intervals.jsonl``. From
them :func:`analyse_run` recomputes the cohort analysis (deterministic: seeds
come from names) and :func:`render_run_report` builds ``report.json``,
``report.md``, ``report.html`` and the effects table. The evidence-eval flow and
``pairlab report`` call the same two functions, so re-rendering a finished or
pulled run reproduces its report byte for byte. Nothing in a report depends on
the wall clock or on where the run lives on disk.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import polars as pl
from pydantic import Field

from pairlab.core.accounts import AccountStamp
from pairlab.core.analysis.cohorts import analyse_cohorts
from pairlab.core.analysis.result import effects_frame
from pairlab.core.analysis.study_plan import ResolvedPlan
from pairlab.core.budget import BudgetStatus
from pairlab.core.findings.claim2 import render_retrieval_markdown, retrieval_evidence
from pairlab.core.findings.warm_stratum import render_warm_markdown, warm_effects
from pairlab.core.intervention_health import count_intervention_health
from pairlab.core.provider_limit import PROVIDER_LIMIT
from pairlab.core.quota.intervals import QuotaIntervalRecord
from pairlab.core.report.headline import build_headline
from pairlab.core.report.html import render_report_html
from pairlab.core.report.intervention_answer import intervention_measures
from pairlab.core.report.markdown import build_report_json, render_report_markdown
from pairlab.core.schemas.base import StrictModel
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.schemas.profile import InterventionStamp
from pairlab.core.subscription import analyse_subscription
from pairlab.core.verdict.artifact import ProviderValue

RUN_SETTINGS_NAME: Final = "run.json"
DEFAULT_RESAMPLES: Final = 10_000
DEFAULT_CONFIDENCE: Final = 0.95
REPORT_FILES: Final = ("report.json", "report.md", "report.html")


class QuotaIntervalSettings(StrictModel):
    episodes_per_interval: int = Field(ge=1)
    interval_s: float = Field(gt=0)


class ScriptedModelUse(StrictModel):
    """The provider emulator's scripted model played the run's episodes (issue 26 item 4):
    it measures transport and context cost, not a model's behaviour. ``builtin``: the
    reference intervention, whose tools the script itself calls; otherwise the planned
    tasks whose treated episodes follow the intervention's usage recipe, and those that
    measure the floor (its tool definitions only)."""

    builtin: bool
    recipe_tasks: list[str] = Field(default_factory=list)
    floor_tasks: list[str] = Field(default_factory=list)


class RunSettings(StrictModel):
    """``run.json``: what a run's report needs beyond its records, intervals and plan."""

    schema_version: Literal[1] = 1
    run_id: str = Field(min_length=1)
    suite: str
    profile: str
    backend: str
    arms: list[str]
    repetitions: int = Field(ge=1)
    seed: int
    client: str
    include_transcript: bool = False
    gate: int = Field(ge=2)
    # the provider loom's quota observations name for the client (claude/codex), if any
    quota_provider: ProviderValue | None = None
    quota_intervals: QuotaIntervalSettings | None = None
    # the run's intervention (issue 26): id, version, manifest sha256; None on older runs
    intervention: InterventionStamp | None = None
    # the registered account the run used (issue 27); None: the emulator or the simulator
    account: AccountStamp | None = None
    # the emulator's scripted model played the episodes: recipe vs floor per task (issue 26)
    scripted_model: ScriptedModelUse | None = None
    # the run's approved budget ceiling and where the run stands against it (issue 27)
    budget: BudgetStatus | None = None
    resamples: int = Field(DEFAULT_RESAMPLES, ge=100)
    confidence: float = Field(DEFAULT_CONFIDENCE, ge=0.5, lt=1.0)

    def to_json_text(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"


def analyse_records(
    records: Sequence[EpisodeRecord],
    *,
    run_id: str,
    gate: int,
    plan: ResolvedPlan,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[str, Any]:
    """The cohort analysis of a run's records (the ``pairlab aggregate --json`` shape)."""
    return analyse_cohorts(
        list(records),
        run_id=run_id,
        min_pairs=gate,
        plan=plan,
        n_resamples=resamples,
        confidence=confidence,
    ).to_json()


def analyse_run(
    records: Sequence[EpisodeRecord], settings: RunSettings, plan: ResolvedPlan
) -> dict[str, Any]:
    """The analysis a finished run computed, recomputed from its stored settings."""
    return analyse_records(
        records,
        run_id=settings.run_id,
        gate=settings.gate,
        plan=plan,
        resamples=settings.resamples,
        confidence=settings.confidence,
    )


def _plan_meta(plan: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(plan, Mapping):
        return None
    return {k: plan.get(k) for k in ("id", "source", "sha256", "min_pairs", "alpha")}


def _excluded_by_reason(records: Sequence[EpisodeRecord]) -> dict[str, int]:
    """Excluded episodes per reason, most first (a reason left unrecorded: ``unknown``)."""
    counts: dict[str, int] = {}
    for record in records:
        if record.excluded:
            reason = record.excluded_reason or "unknown"
            counts[reason] = counts.get(reason, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def run_meta(
    settings: RunSettings, records: Sequence[EpisodeRecord], analysis: Mapping[str, Any]
) -> dict[str, Any]:
    """``report.json`` → ``meta``: the run's parameters and counts of its episodes."""
    catalogs = sorted({r.price_catalog_version for r in records if r.price_catalog_version})
    return {
        "run_id": settings.run_id,
        "suite": settings.suite,
        "profile": settings.profile,
        "backend": settings.backend,
        "arms": list(settings.arms),
        "repetitions": settings.repetitions,
        "seed": settings.seed,
        "episodes": len(records),
        "failed": sum(1 for r in records if not r.success),
        "excluded": sum(1 for r in records if r.excluded),
        "excluded_by_reason": _excluded_by_reason(records),
        "intervention_health": count_intervention_health(records),
        # per treated arm: definition tokens per model request, calls of its tools
        "intervention_measures": intervention_measures(records),
        "min_pairs": analysis.get("gate", settings.gate),
        "exploratory": analysis.get("exploratory"),
        "all_below_gate": analysis.get("allBelowGate"),
        "study_plan": _plan_meta(analysis.get("plan")),
        "client": settings.client,
        "price_catalog_version": catalogs[-1] if catalogs else None,
        "include_transcript": settings.include_transcript,
        "quota_intervals": None
        if settings.quota_intervals is None
        else settings.quota_intervals.model_dump(mode="json"),
        "intervention": None
        if settings.intervention is None
        else settings.intervention.model_dump(mode="json"),
        **(
            {}
            if settings.account is None
            else {"account": settings.account.model_dump(mode="json")}
        ),
        **({} if settings.budget is None else {"budget": settings.budget.to_json()}),
        **(
            {}
            if settings.scripted_model is None
            else {"scripted_model": settings.scripted_model.model_dump(mode="json")}
        ),
        **({"provider_limited": limited} if (limited := _provider_limited(records)) else {}),
    }


def _provider_limited(records: Sequence[EpisodeRecord]) -> int:
    """Episodes a provider's limit ended (core/provider_limit.py); 0 keeps ``meta`` as it was."""
    return sum(1 for r in records if r.excluded_reason == PROVIDER_LIMIT)


@dataclass(frozen=True)
class RenderedReport:
    payload: dict[str, Any]  # report.json's content
    json_text: str
    markdown: str
    html: str
    effects: pl.DataFrame  # effects.parquet: token and subscription effects

    def text_of(self, name: str) -> str:
        """The rendering written as ``name`` (one of :data:`REPORT_FILES`)."""
        return {
            "report.json": self.json_text,
            "report.md": self.markdown,
            "report.html": self.html,
        }[name]


def report_json_text(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, indent=2, default=str) + "\n"


def render_run_report(
    settings: RunSettings,
    records: Sequence[EpisodeRecord],
    intervals: Sequence[QuotaIntervalRecord],
    plan: ResolvedPlan,
    analysis: Mapping[str, Any],
) -> RenderedReport:
    """Every rendering of a run's report from its stored inputs and its analysis."""
    subscription = analyse_subscription(
        records,
        intervals,
        analysis,
        plan.plan,
        provider=settings.quota_provider,
        n_resamples=settings.resamples,
        confidence=settings.confidence,
    )
    meta = run_meta(settings, records, analysis)
    headline = build_headline(analysis, subscription)
    payload = build_report_json(meta, analysis, subscription, headline)
    retrieval = retrieval_evidence(records)  # issue 18, claim 2
    payload["retrievalEvidence"] = retrieval
    warm = warm_effects(records)  # issue 18, claim 4 (None without a warm stratum)
    payload["acrossSessions"] = warm
    effects = pl.concat(
        [effects_frame(dict(analysis)), effects_frame(subscription)], how="vertical"
    )
    return RenderedReport(
        payload=payload,
        json_text=report_json_text(payload),
        markdown=render_report_markdown(meta, analysis, subscription, headline)
        + "\n".join([*render_retrieval_markdown(retrieval), *render_warm_markdown(warm)]),
        html=render_report_html(payload),
        effects=effects,
    )


__all__ = [
    "REPORT_FILES",
    "RUN_SETTINGS_NAME",
    "QuotaIntervalSettings",
    "RenderedReport",
    "RunSettings",
    "analyse_records",
    "analyse_run",
    "render_run_report",
    "report_json_text",
    "run_meta",
]
