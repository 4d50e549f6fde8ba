"""Canary-trial evidence (DESIGN 9): the frozen trial manifest, per-run evidence, the artifact.

The canary flow freezes a :class:`TrialManifest` before anything runs, records
one :class:`RunEvidence` per executed episode, and turns them into the
version-1 comparison artifact with :func:`build_artifact` (validated against
:mod:`pairlab.core.verdict.artifact`, so a malformed artifact is never written).

Only identifiers, digests, statuses, numbers and times go into the artifact:
no prompt, output, path, secret, price or account identity. A missing
measurement stays ``None`` (never zero), which the verdict reads as inconclusive.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pairlab.core.records import all_passed
from pairlab.core.schemas.quota import QuotaObservation, continuity
from pairlab.core.schemas.usage import UsageVector
from pairlab.core.verdict.artifact import Artifact

_NOT_ID = re.compile(r"[^A-Za-z0-9._:-]")


def to_identifier(text: str) -> str:
    """An artifact identifier (1-160 bytes of ``[A-Za-z0-9._:-]``) from free text."""
    cleaned = _NOT_ID.sub("-", text)[:160]
    return cleaned if cleaned.strip(".") else "unknown"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FrozenFixture(_Model):
    task_id: str
    fixture: str
    fixture_digest: str  # sha256:<hex> over the fixture tree (sorted relative paths)
    acceptance_contract_id: str  # sha256:<hex> of the task's grader definitions
    required_checks: list[str]  # grader names


class ArmRevision(_Model):
    arm: Literal["baseline", "candidate"]
    revision: str
    sim_effects: dict[str, Any] | None = None  # simulator only: the effect configuration


class Assignment(_Model):
    provider: str
    model: str
    effort: str | None = None


class PlannedRun(_Model):
    episode_id: str
    pair_id: str
    task_id: str
    stratum: str
    repetition: int
    order: int
    arm: str


class Budget(_Model):
    episodes: int
    estimated_tokens_per_episode: int
    estimated_tokens_total: int
    window_budget_tokens: dict[str, int | None]  # window -> budget (simulator); None = unknown
    estimated_quota_percent: dict[str, float | None]  # window -> whole-trial estimate


class TrialManifest(_Model):
    schema_version: Literal[1] = 1
    trial_id: str
    created_at: datetime
    intervention_id: str
    changed_dimensions: list[str]
    baseline: ArmRevision
    candidate: ArmRevision
    source_revision: str
    environment_id: str
    environment: dict[str, str]
    fixtures: list[FrozenFixture]
    review_dimensions: list[str]
    assignments: list[Assignment]
    strata: list[str]
    strata_meaning: dict[str, str]
    repetitions: int
    seed: int
    quota_interval_s: float
    unrelated_concurrent_use: bool | None
    budget: Budget
    planned: list[PlannedRun]

    def fixture(self, task_id: str) -> FrozenFixture:
        return next(f for f in self.fixtures if f.task_id == task_id)

    def revision(self, arm: str) -> str:
        return self.baseline.revision if arm == "baseline" else self.candidate.revision


class CheckResult(_Model):
    name: str
    passed: bool | None


class RunEvidence(PlannedRun):
    """What one executed episode contributes to the artifact (written per episode):
    its planned identity (the inherited fields, first on the wire) and what it did."""

    exit_code: int | None
    timed_out: bool
    checks: list[CheckResult]
    observed_model: str | None
    usage: UsageVector | None
    usage_provenance: dict[str, int] | None
    critical_path_ms: float | None = Field(default=None, ge=0)
    notification_ms: float | None = Field(default=None, ge=0)
    quota_before: list[QuotaObservation]
    quota_after: list[QuotaObservation]
    interval_scheduled_s: float
    interval_overrun: bool  # the episode and its grading outlasted the scheduled interval


def accounting_provenance(usage: UsageVector | None, counts: dict[str, int] | None) -> str:
    """Map the usage reader's record classes to the artifact's provenance vocabulary."""
    if usage is None or not counts or counts.get("measured", 0) <= 0:
        return "unknown-usage"
    if counts.get("unknown-usage", 0) > 0:
        return "unknown-usage"
    if counts.get("synthetic-error", 0) > 0:
        return "synthetic"
    return "measured-canonical"


def token_vectors(provider: str, usage: UsageVector | None) -> list[dict[str, Any]]:
    """The provider-native vector (Claude or Codex dimensions); none for other providers."""
    if usage is None:
        return []
    if provider == "claude":
        dims: dict[str, int | None] = {
            "fresh_input": usage.uncached_input,
            "cache_read": usage.cache_read,
            "cache_write_5m": usage.cache_write_5m,
            "cache_write_1h": usage.cache_write_1h,
            "output": usage.output,
            "cache_creation_total": usage.cache_write_total,
        }
    elif provider == "codex":
        known = usage.uncached_input is not None and usage.cache_read is not None
        dims = {
            "fresh_input": usage.uncached_input,
            "cached_input": usage.cache_read,
            "output": usage.output,
            "input_total": (usage.uncached_input or 0) + (usage.cache_read or 0) if known else None,
            "reasoning_output": usage.reasoning,
        }
    else:
        return []
    return [{"provider": provider, "dimensions": dims}]


def _point(obs: QuotaObservation) -> dict[str, Any]:
    return {
        "observed_at": obs.observed_at.isoformat(),
        "used_percent": obs.used_percent,
        "resets_at": obs.resets_at.isoformat() if obs.resets_at else None,
        "reset_id": to_identifier(obs.reset_id) if obs.reset_id else None,
    }


def quota_intervals(
    provider: str,
    before: Sequence[QuotaObservation],
    after: Sequence[QuotaObservation],
    unrelated_concurrent_use: bool | None,
) -> list[dict[str, Any]]:
    """One interval per window observed at both ends; continuity from the two endpoints."""
    ends = {o.window: o for o in after}
    out = []
    for start in sorted(before, key=lambda o: o.window):
        end = ends.get(start.window)
        if end is None:
            continue
        precisions = [p for p in (start.precision_percent, end.precision_percent) if p is not None]
        known = start.precision_percent is not None and end.precision_percent is not None
        out.append(
            {
                "provider": provider,
                "window": start.window,
                "start": _point(start),
                "end": _point(end),
                "continuity": str(continuity(start, end)),
                "unrelated_concurrent_use": unrelated_concurrent_use,
                "precision_percent": max(precisions) if known else None,
            }
        )
    return out


def _status(passed: bool | None) -> str:
    return "missing" if passed is None else ("passed" if passed else "failed")


def artifact_run(manifest: TrialManifest, ev: RunEvidence) -> dict[str, Any]:
    """The artifact's run object for one episode."""
    fixture = manifest.fixture(ev.task_id)
    by_name = {c.name: c.passed for c in ev.checks}
    required = [by_name.get(name) for name in fixture.required_checks]
    checks_ok = all_passed([c.passed for c in ev.checks] + required)
    finished = ev.exit_code == 0 and not ev.timed_out
    accepted = False if not finished else checks_ok
    assignment = manifest.assignments[0]
    model = ev.observed_model or assignment.model
    return {
        "run_id": to_identifier(ev.episode_id),
        "workload_id": to_identifier(ev.task_id),
        "fixture_ids": [to_identifier(fixture.fixture)],
        "source_input_revision": to_identifier(manifest.source_revision),
        "source_input_digest": to_identifier(fixture.fixture_digest),
        "environment_id": to_identifier(manifest.environment_id),
        "acceptance_contract_id": to_identifier(fixture.acceptance_contract_id),
        "implementation_revision": to_identifier(manifest.revision(ev.arm)),
        "assignments": [
            {
                "provider": to_identifier(assignment.provider),
                "model": to_identifier(model),
                "effort": to_identifier(assignment.effort) if assignment.effort else None,
            }
        ],
        "acceptance": {"accepted": accepted},
        "semantic_completion": {"passed": checks_ok},
        "required_checks": [
            {"id": to_identifier(name), "status": _status(by_name.get(name))}
            for name in fixture.required_checks
        ],
        "review_dimensions": [
            {"id": to_identifier(dim), "independent": True, "result": _status(checks_ok)}
            for dim in manifest.review_dimensions
        ],
        "unresolved_findings": [],
        "omitted_requirements": [],
        "retry_count": 0,  # the trial never retries an agent run
        "fix_count": 0,  # nor runs fix-up turns
        "latency": {
            "critical_path_ms": ev.critical_path_ms,
            "notification_ms": ev.notification_ms,
        },
        "accounting": {"provenance": accounting_provenance(ev.usage, ev.usage_provenance)},
        "token_vectors": token_vectors(assignment.provider, ev.usage),
        "quota_intervals": quota_intervals(
            to_identifier(assignment.provider),
            ev.quota_before,
            ev.quota_after,
            manifest.unrelated_concurrent_use,
        ),
    }


def build_artifact(manifest: TrialManifest, evidence: Sequence[RunEvidence]) -> dict[str, Any]:
    """The version-1 comparison artifact: one pair per planned pair whose two runs both exist.

    A pair with a missing run (it never executed) is left out and listed by the
    caller; the artifact is validated against the strict models before it is returned.
    """
    by_pair: dict[str, dict[str, RunEvidence]] = {}
    for ev in evidence:
        by_pair.setdefault(ev.pair_id, {})[ev.arm] = ev
    pairs = []
    seen: set[str] = set()
    for planned in manifest.planned:
        if planned.pair_id in seen:
            continue
        seen.add(planned.pair_id)
        runs = by_pair.get(planned.pair_id, {})
        if "baseline" not in runs or "candidate" not in runs:
            continue
        pairs.append(
            {
                "work_unit_id": to_identifier(f"{planned.task_id}:r{planned.repetition}"),
                "stratum": to_identifier(planned.stratum),
                "baseline": artifact_run(manifest, runs["baseline"]),
                "candidate": artifact_run(manifest, runs["candidate"]),
            }
        )
    payload = {
        "schema_version": 1,
        "intervention": {
            "id": to_identifier(manifest.intervention_id),
            "baseline_revision": to_identifier(manifest.baseline.revision),
            "candidate_revision": to_identifier(manifest.candidate.revision),
            "changed_dimensions": list(manifest.changed_dimensions),
        },
        "pairs": pairs,
    }
    return Artifact.model_validate_json(json.dumps(payload)).model_dump(mode="json")
