"""Canary evidence → loom's version-1 comparison artifact (docs/compare-artifact.md).

One pair per planned pair whose two runs both executed; the pair's
``work_unit_id`` is ``<task>:<stratum>:r<repetition>`` (loom's pairs have no
stratum field, so the predeclared stratum is part of the opaque id). Per run:

* identity — the episode id, the task as workload, the fixture, its tree
  digest as source digest, the source revision, the environment id, the
  task's grader-definition digest as ``acceptance_contract_digest``, the arm's
  revision;
* assignment — the trial's provider (``claude``/``codex``), the model the
  usage reader observed (else the assigned one) and the effort (``default``
  when the client's own default was used);
* quality — every grader is a required check ``{command_id: grader,
  contract_id: the acceptance-contract digest}``; accepted when the run
  finished and every check passed (unknown when a check is); semantic
  completion and each frozen review dimension (independent: graders run after
  the agent, outside it) follow the checks; no findings or omissions are
  recorded; retries and fixes are 0 (the trial never retries or fixes up);
* latency — critical path and notification latency in whole milliseconds
  (rounded), unknown stays null;
* accounting and tokens — :mod:`pairlab.core.canary.tokens`;
* quota — :mod:`pairlab.core.canary.quota`.

The payload is decoded with the verdict's own models before it is returned, so
an artifact pairlab cannot read is never written.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Final

from pairlab.core.canary.evidence import RunEvidence
from pairlab.core.canary.manifest import TrialManifest, to_identifier
from pairlab.core.canary.quota import quota_observations
from pairlab.core.canary.tokens import accounting, loom_provider, loom_vector
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.records import all_passed
from pairlab.core.verdict.artifact import SCHEMA_VERSION, EvidenceVerdict
from pairlab.core.verdict.loading import load_artifact

DEFAULT_EFFORT: Final = "default"


def _verdict(passed: bool | None) -> str:
    if passed is None:
        return str(EvidenceVerdict.UNKNOWN)
    return str(EvidenceVerdict.PASSED if passed else EvidenceVerdict.FAILED)


def _ms(value: float | None) -> int | None:
    return None if value is None else math.floor(value + 0.5)


def artifact_run(manifest: TrialManifest, ev: RunEvidence) -> dict[str, Any]:
    """The artifact's run object for one episode."""
    fixture = manifest.fixture(ev.task_id)
    by_name = {c.name: c.passed for c in ev.checks}
    checks_ok = all_passed(
        [c.passed for c in ev.checks] + [by_name.get(n) for n in fixture.required_checks]
    )
    finished = ev.exit_code == 0 and not ev.timed_out
    assignment = manifest.assignments[0]
    provider = loom_provider(assignment.provider)
    complete, provenance = accounting(ev.usage, ev.usage_provenance)
    contract = to_identifier(fixture.acceptance_contract_id)
    return {
        "run_id": to_identifier(ev.episode_id),
        "workload_id": to_identifier(ev.task_id),
        "fixture_id": to_identifier(fixture.fixture),
        "source_input_revision": to_identifier(manifest.source_revision),
        "source_input_digest": to_identifier(fixture.fixture_digest),
        "environment_id": to_identifier(manifest.environment_id),
        "acceptance_contract_digest": contract,
        "implementation_revision": to_identifier(manifest.revision(ev.arm)),
        "assignments": [
            {
                "provider": str(provider),
                "model": to_identifier(ev.observed_model or assignment.model),
                "effort": to_identifier(assignment.effort or DEFAULT_EFFORT),
            }
        ],
        "accepted": checks_ok if finished else False,
        "required_checks": [
            {
                "command_id": to_identifier(name),
                "contract_id": contract,
                "verdict": _verdict(by_name.get(name)),
            }
            for name in fixture.required_checks
        ],
        "reviewed_dimensions": [
            {"dimension": to_identifier(dim), "independent": True, "verdict": _verdict(checks_ok)}
            for dim in manifest.review_dimensions
        ],
        "unresolved_findings": [],
        "omitted_requirements": [],
        "retry_count": 0,
        "fix_count": 0,
        "semantic_completion": _verdict(checks_ok),
        "critical_path_ms": _ms(ev.critical_path_ms),
        "notification_latency_ms": _ms(ev.notification_ms),
        "accounting_complete": complete,
        "accounting_provenance": str(provenance),
        "provider_tokens": (
            {str(provider): loom_vector(provider, ev.usage)} if ev.usage is not None else {}
        ),
        "quota_observations": quota_observations(
            provider, ev.quota_before, ev.quota_after, manifest.unrelated_concurrent_use
        ),
    }


def work_unit_id(task_id: str, stratum: str, repetition: int) -> str:
    return to_identifier(f"{task_id}:{stratum}:r{repetition}")


def build_artifact(manifest: TrialManifest, evidence: Sequence[RunEvidence]) -> dict[str, Any]:
    """loom's version-1 artifact: one pair per planned pair whose two runs both exist.

    A pair with a missing run (it never executed) is left out; the caller lists it. A
    run with an ``excluded_reason`` (a provider limit ended it) is not evidence of its
    arm: its pair is left out too, never judged on it.
    """
    by_pair: dict[str, dict[str, RunEvidence]] = {}
    for ev in evidence:
        if ev.excluded_reason is not None:
            continue
        by_pair.setdefault(ev.pair_id, {})[ev.arm] = ev
    pairs = []
    seen: set[str] = set()
    for planned in manifest.planned:
        runs = by_pair.get(planned.pair_id, {})
        if planned.pair_id in seen or "baseline" not in runs or "candidate" not in runs:
            continue
        seen.add(planned.pair_id)
        pairs.append(
            {
                "work_unit_id": work_unit_id(planned.task_id, planned.stratum, planned.repetition),
                "baseline": artifact_run(manifest, runs["baseline"]),
                "candidate": artifact_run(manifest, runs["candidate"]),
            }
        )
    payload = {
        "schema_version": SCHEMA_VERSION,
        "intervention": {
            "intervention_id": to_identifier(manifest.intervention_id),
            "baseline_revision": to_identifier(manifest.baseline.revision),
            "candidate_revision": to_identifier(manifest.candidate.revision),
            "changed_dimensions": list(manifest.changed_dimensions),
        },
        "pairs": pairs,
    }
    decoded = load_artifact(json.dumps(payload).encode())
    if decoded.artifact is None:  # a writer bug, never the evidence's fault
        raise InvalidInputError(
            f"the canary artifact does not decode: {decoded.problems[:3]}",
            reason=ReasonCode.MALFORMED_INPUT,
        )
    return payload
