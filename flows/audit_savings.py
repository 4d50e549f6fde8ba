"""The audit-savings flow: a read-only audit of MCP transport ledgers (a run dir or one DB)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from pydantic import BaseModel, ConfigDict, Field

from pairlab.adapters.mcp_ledger.audit import audit_path


class AuditParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="A run directory (runs/<run_id>) or a ledger.db file")


@flow(name="audit-savings", validate_parameters=True)
def audit_savings(params: AuditParams) -> dict[str, Any]:
    """Audit the ledger(s) read-only and show the four quantities."""
    result = audit_path(Path(params.path))
    keys = (
        "verified_net_tokens",
        "gross_reduction_tokens",
        "expansion_debit_tokens",
        "observed_returned_tokens",
        "excluded_count",
    )
    lines = [
        f"# MCP savings audit — `{params.path}`",
        "",
        "Local GPT-4-compatible tokenizer estimate, not a provider invoice.",
        "",
        "| quantity | tokens |",
        "|---|---|",
        *[f"| {k} | {'—' if result.get(k) is None else result.get(k)} |" for k in keys],
    ]
    create_markdown_artifact(key="savings-audit", markdown="\n".join(lines) + "\n")
    return result


def deployment() -> Any:
    return audit_savings.to_deployment(
        name="audit-savings",
        description="Read-only audit of MCP transport ledgers.",
        tags=["pairlab"],
    )
