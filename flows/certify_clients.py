"""The certify-clients flow: validate every runner profile and run its isolation probe.

Deterministic configuration checks are never counted as causal evidence; they
gate whether a profile may be used at all.
"""

from __future__ import annotations

from typing import Any, Literal

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from pydantic import BaseModel, ConfigDict, Field

from pairlab.adapters.certify.sim import certify_profiles
from pairlab.core.errors import PairlabError, ReasonCode


class CertifyParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    profile: str | None = Field(None, description="Only this profile (empty = all)")
    backend: Literal["local", "docker"] = Field("local", description="Where the probe episodes run")


@flow(name="certify-clients", validate_parameters=True)
def certify_clients(params: CertifyParams | None = None) -> dict[str, Any]:
    """Certify runner profiles; the run fails if any profile fails (a PairlabError with
    reason ``certification-failed``, exit 1, after both artifacts are written)."""
    params = params or CertifyParams()
    report = certify_profiles(backend_name=params.backend, only=params.profile)
    payload = report.to_json()
    rows = [
        {
            "profile": p["profile"],
            "client": p["client"],
            "status": p["status"],
            "version": p.get("version"),
            "failed checks": ", ".join(c["name"] for c in p["checks"] if not c["passed"]),
        }
        for p in payload["profiles"]
    ]
    create_table_artifact(
        key="certification", table=rows, description="runner profile certification"
    )
    lines = ["# Certification", ""]
    for p in payload["profiles"]:
        lines.append(f"## {p['profile']} — **{p['status']}**")
        lines += [
            f"- {'✔' if c['passed'] else '✘'} {c['name']}: {c['detail']}" for c in p["checks"]
        ]
        lines.append("")
        matrix = report.profiles[payload["profiles"].index(p)].matrix
        if matrix is not None:  # planted item x arm: what each episode saw
            lines += ["What each episode saw (x = seen):", "", *matrix.render(), ""]
    create_markdown_artifact(key="certification-report", markdown="\n".join(lines))
    if not report.passed:
        failed = [p["profile"] for p in payload["profiles"] if p["status"] == "failed"]
        raise PairlabError(
            f"certification failed for: {', '.join(failed)}",
            reason=ReasonCode.CERTIFICATION_FAILED,
        )
    return payload


def deployment() -> Any:
    return certify_clients.to_deployment(
        name="certify-clients",
        parameters={"params": CertifyParams().model_dump(mode="json")},
        description="Validate runner profiles and prove baseline isolation.",
        tags=["pairlab"],
    )
