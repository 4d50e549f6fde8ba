"""The deployments served by `pairlab serve` (one place; infra/ holds the file form).

Defaults describe a small evaluation with the simulator that finishes in a couple
of minutes, so a fresh install can trigger one from the UI as is.
"""

from __future__ import annotations

from typing import Any

from prefect import serve

from flows import audit_savings, canary_trial, certify_clients, compare_artifact
from flows.evidence_eval import evidence_eval
from flows.params import EvidenceEvalParams

SMALL_EVAL = EvidenceEvalParams(
    task_filter=["fix-median", "answer-cache-env"], repetitions=5, concurrency=2
)


def build_deployments() -> list[Any]:
    deployments = [
        by_module_path(
            evidence_eval.to_deployment(
                name="evidence-eval",
                parameters={"params": SMALL_EVAL.model_dump(mode="json")},
                description="Paired 4-arm evidence evaluation (small simulator run by default).",
                tags=["pairlab"],
            ),
            evidence_eval,
        ),
    ]
    for module, flow_obj in (
        (certify_clients, certify_clients.certify_clients),
        (compare_artifact, compare_artifact.compare_artifact),
        (audit_savings, audit_savings.audit_savings),
        (canary_trial, canary_trial.canary_trial),
    ):
        deployments.append(by_module_path(module.deployment(), flow_obj))
    return deployments


def by_module_path(deployment: Any, flow_obj: Any) -> Any:
    """Point a deployment at ``package.module.flow`` instead of a file path relative to the cwd.

    ``to_deployment`` records ``../../work/main/flows/x.py:flow`` relative to the
    directory `pairlab serve` was started in; the module path of the installed
    package resolves from any directory, for this process and for workers.
    """
    fn = flow_obj.fn
    # No ':' in the entrypoint = a module path for prefect's load_flow_from_entrypoint.
    deployment.entrypoint = f"{fn.__module__}.{fn.__name__}"
    return deployment


def serve_all(limit: int = 4) -> None:
    serve(*build_deployments(), limit=limit)
