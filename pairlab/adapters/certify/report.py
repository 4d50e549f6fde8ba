"""What ``pairlab certify`` reports: checks, the planted item x arm matrix, per-profile results.

The simulator certifier (``sim``) and the live one (``live``) both build these, so they live
below both: ``sim`` dispatches to ``live`` and neither imports the other's types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from pairlab.adapters.backends.base import ExecutionBackend

Status = Literal["passed", "failed", "not-live-certified"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CertifyCheck(_Model):
    name: str
    passed: bool
    detail: str


class MatrixRow(_Model):
    item: str  # a planted item's slug (or the arm's intervention)
    scope: str  # user | project | arm
    path: str
    what: str
    seen: dict[str, bool]  # column -> did the episode show it


class IsolationMatrix(_Model):
    """Planted item x arm (and x baseline without each isolation flag): what each saw."""

    columns: list[str]
    rows: list[MatrixRow]

    def render(self) -> list[str]:
        """The table as markdown lines (``x`` seen, ``-`` not)."""
        head = ["planted item", "where", *self.columns]
        lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        for row in self.rows:
            cells = ["x" if row.seen.get(c) else "-" for c in self.columns]
            lines.append(f"| {row.item} | {row.scope}: {row.path} | " + " | ".join(cells) + " |")
        return lines


class ProfileCertification(_Model):
    client: str
    profile: str
    status: Status
    checks: list[CertifyCheck]
    version: str | None
    matrix: IsolationMatrix | None = None
    # claim 1 (issue 18): lifecycle events the protocol exposed to the intervention, per
    # client; deterministic verification, never causal evidence
    lifecycle: dict[str, Any] | None = None


class CertifyReport(_Model):
    profiles: list[ProfileCertification]
    passed: bool

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


BackendFactory = Callable[[dict[str, str]], ExecutionBackend]
