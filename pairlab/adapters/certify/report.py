"""What ``pairlab certify`` reports: checks, the planted item x arm matrix, per-profile results.

The simulator certifier (``sim``) and the live one (``live``) both build these, so they live
below both: ``sim`` dispatches to ``live`` and neither imports the other's types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from pairlab.adapters.backends.base import ExecutionBackend
from pairlab.core.schemas.profile import CertificationLevel

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


class ListedTools(_Model):
    """What one treated arm's requests carried of the certified server (issue 26 item 3),
    read from the emulator's request log. ``tools``: the tool names the CLI listed to the
    model (the union over the episode's requests, in order of first appearance);
    ``definition_tokens``: per request, in order, the cl100k cost of what the request
    carried of the server (``live.definition_tokens`` says exactly what is counted);
    ``deferred``: the CLI deferred the server's tools behind a tool search (both CLIs do:
    the request names them and carries their definitions only once a search loads them).

    Against the server's own ``tools/list`` for the arm (:meth:`against`; None when the
    server was not asked): ``unlisted``, its tools the CLI never named in the arm (Codex
    names only the ones a search loaded); ``not_the_servers``, names the CLI listed that
    its tools/list lacks."""

    arm: str
    server: str
    tools: list[str]
    requests: int
    definition_tokens: list[int]
    deferred: bool
    encoding: str
    unlisted: list[str] | None = None
    not_the_servers: list[str] | None = None

    def against(self, server_tools: list[str] | None) -> ListedTools:
        """This listing compared with the server's tools/list names (bare, as the server
        names them; the CLI's ``mcp__<server>__`` / ``mcp__<server>/`` prefix is dropped)."""
        if server_tools is None:
            return self
        bare = [_bare_tool(name) for name in self.tools]
        return self.model_copy(
            update={
                "unlisted": [t for t in server_tools if t not in bare],
                "not_the_servers": [t for t in bare if t not in server_tools],
            }
        )

    def line(self) -> str:
        costs = sorted(set(self.definition_tokens))
        cost = "/".join(str(c) for c in costs) if costs else "-"
        listed = ", ".join(self.tools) if self.tools else "none"
        defer = "; deferred behind the tool search" if self.deferred else ""
        versus = ""
        if self.unlisted is not None and self.not_the_servers is not None:
            named = len(self.tools) - len(self.not_the_servers)
            versus = f"; {named} of the server's {named + len(self.unlisted)} tools/list tools"
            if self.not_the_servers:
                versus += f", not in its tools/list: {', '.join(self.not_the_servers)}"
        return (
            f"{self.arm}: {len(self.tools)} tools of {self.server} ({listed}); "
            f"{cost} {self.encoding} tokens per request over {self.requests} requests"
            f"{defer}{versus}"
        )


def _bare_tool(name: str) -> str:
    """``mcp__<server>__<tool>`` (Claude) or ``mcp__<server>/<tool>`` (Codex) -> ``<tool>``."""
    if "/" in name:
        return name.rsplit("/", 1)[1]
    return name.split("__", 2)[2] if name.startswith("mcp__") and name.count("__") >= 2 else name


class ProfileCertification(_Model):
    client: str
    profile: str
    status: Status
    checks: list[CertifyCheck]
    version: str | None
    # the profile's certification level (live-local, simulator, unavailable); None: a
    # profile file that did not load
    level: CertificationLevel | None = None
    matrix: IsolationMatrix | None = None
    # claim 1 (issue 18): lifecycle events the protocol exposed to the intervention, per
    # client; deterministic verification, never causal evidence
    lifecycle: dict[str, Any] | None = None
    # the certified intervention (id, version, manifest hash) and, per treated arm, the
    # tools the CLI actually listed with their definitions' token cost per request
    intervention: dict[str, str] | None = None
    listed_tools: list[ListedTools] | None = None
    # per treated arm, the tool names the server itself answered to tools/list (started
    # before any episode, as the arm starts it; adapters/mcp_tools_list)
    server_tools: dict[str, list[str]] | None = None
    # certify --account: the account the probe ran on (name, client, kind, provider URL;
    # never the credential)
    account: dict[str, Any] | None = None


class CertifyReport(_Model):
    profiles: list[ProfileCertification]
    passed: bool

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


BackendFactory = Callable[[dict[str, str]], ExecutionBackend]
