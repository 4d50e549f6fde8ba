"""Whether a treated episode's intervention was really there: ``loaded``, or why not.

A bad server must never pass for a plain treated episode (issue 26 item 6: a
Codex-on-Docker retrieval episode once missed the tools silently and was recorded as a
treated episode without MCP calls). Each treated episode gets one status, recorded on
its record (``interventionStatus``, with ``interventionDetail``); any status but
``loaded`` excludes it from effects (``excludedReason`` = the status) and the report
counts it. The run goes on: a bad server is an outcome of the episode, not an error.

===========================  =====================================================
status                       when
===========================  =====================================================
``intervention-start-failed``  the CLI could not connect: the command failed or
                               exited before the handshake
``intervention-timeout``       the handshake did not finish within the manifest's
                               ``startup_timeout_s`` (the CLI gave up waiting)
``intervention-exited``        connected, then the server went away mid-episode
``intervention-not-loaded``    the CLI ran and asked the model, but no request
                               offered any of the server's tools
``loaded``                     at least one request offered them, no fault above
===========================  =====================================================

The evidence, most specific first (:func:`judge_intervention`):

1. **The CLI's own account of the server's connection** (:class:`ServerReport`, read
   by the CLI's adapter from its output and files: Claude Code's per-server MCP log in
   HOME and its stream-json ``init`` status, ``adapters/clients/claude.py``). It is the
   only source that tells a timeout from a start failure from a mid-episode exit.
2. **The provider emulator's request ledger** (:func:`server_offered`, the ground truth
   of what reached the model): a treated episode none of whose model requests offered
   the server -- its ``mcp__<server>__`` tools, or (Codex) its name among the sources of
   ``tool_search`` -- was not loaded, whatever the CLI said (a server that connects and
   lists no tool is ``connected`` to Claude Code); a server offered by some requests and
   missing from a later one has exited.

Why not a wrapper in front of the server command: the CLIs already observe the
connection (Claude Code logs ``CONNECT_TIMEOUT`` against its own ``MCP_TIMEOUT``, the
manifest's ``startup_timeout_s``); a wrapper would add a process to every treated
episode, change the measured startup and the command each CLI starts, and still not
see what the model was offered, which only the ledger knows.

**The intervention's tool calls** (:class:`ToolOutcomes`, on the loaded episode's
health too): a tool that errors or returns a payload larger than the CLI accepts is the
intervention's own behaviour, part of its effect -- the episode is recorded with the
counts and graded as it ended, never excluded for it. Each count is read where it shows:

* ``calls`` and ``errors`` from the CLI's transcript (its stdout events, read by its
  adapter: Claude Code's ``tool_use`` / ``tool_result`` with ``is_error``; Codex's
  ``mcp_tool_call`` items with ``status: failed``). Codex sends the model an
  ``isError: true`` result as plain text, so only its own events tell an error.
* ``oversized`` from the emulator's ledger: the results the CLI sent back cut --
  refused, persisted to a file with a preview, or truncated
  (``core/emulator/conversation.is_cut_result``; each CLI's mark and limit measured
  there) -- counted on the last model request, which resends the whole history.

A count whose source could not be read is None (no transcript events; no ledger, or one
written before the field), never 0.

Null stays null: the baseline gets no status (None), and so does a treated episode with
neither a ledger (no emulator: an account run) nor a report, or whose ledger holds no
model request while the CLI said nothing about the server.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final, Literal

from pairlab.core.emulator.request_ledger import RequestRow, is_model_request
from pairlab.core.schemas.episode import EpisodeRecord


class InterventionStatus(StrEnum):
    LOADED = "loaded"
    START_FAILED = "intervention-start-failed"
    TIMEOUT = "intervention-timeout"
    EXITED = "intervention-exited"
    NOT_LOADED = "intervention-not-loaded"


INTERVENTION_FAULTS: Final = tuple(s for s in InterventionStatus if s != InterventionStatus.LOADED)
BASELINE: Final = "baseline"
# a source line of Codex's tool_search description: "- <server>: ..." (or the name alone)
_SOURCE_LINE = re.compile(r"^- ([A-Za-z0-9_.-]+)(?::|$)", re.M)

Connection = Literal["connected", "start-failed", "timeout"]


@dataclass(frozen=True)
class ServerReport:
    """What the CLI itself said about the intervention's server: how its connection
    ended (None: the CLI said nothing about it), whether it went away after connecting,
    and the CLI's own words (one line) for the record."""

    connection: Connection | None = None
    exited: bool = False
    detail: str | None = None


@dataclass(frozen=True)
class ToolCallsSeen:
    """What the CLI's transcript says of the intervention's tool calls: how many, and how
    many failed (a JSON-RPC error or an ``isError: true`` result)."""

    calls: int
    errors: int


@dataclass(frozen=True)
class ToolOutcomes:
    """The intervention's tool calls in one treated episode (None: not readable)."""

    calls: int | None
    errors: int | None
    oversized: int | None

    def to_json(self) -> dict[str, int | None]:
        return {"calls": self.calls, "errors": self.errors, "oversized": self.oversized}


@dataclass(frozen=True)
class InterventionHealth:
    status: InterventionStatus
    detail: str
    tools: ToolOutcomes | None = None
    # per model request (in order), the tokens of what it carried of the server (its
    # definitions, or the lines naming it while deferred; 0: nothing); None when the
    # ledger did not measure it (no model request, a ledger written before)
    definition_tokens: tuple[int, ...] | None = None

    @property
    def is_fault(self) -> bool:
        return self.status != InterventionStatus.LOADED


def server_offered(row: RequestRow, server_name: str) -> bool:
    """Whether one request offered the server: one of its ``mcp__<server>__`` tools (Claude
    Code; Codex after a search, with ``-`` as ``_``) or the server named among the sources
    of Codex's ``tool_search`` (its tools deferred behind it)."""
    names = {server_name, server_name.replace("-", "_")}
    if any(tool.startswith(f"mcp__{name}__") for tool in row.tools_offered for name in names):
        return True
    sources = _SOURCE_LINE.findall(row.tool_search_sources or "")
    return any(name in sources for name in names)


def _is_server_tool(qualified: str, server_name: str) -> bool:
    """``mcp__<server>__<tool>`` (Claude Code) or ``mcp__<server>/<tool>`` (Codex's
    namespace, ``-`` as ``_``)."""
    names = {server_name, server_name.replace("-", "_")}
    return any(qualified.startswith((f"mcp__{n}__", f"mcp__{n}/")) for n in names)


def count_oversized(requests: Sequence[RequestRow] | None, server_name: str) -> int | None:
    """How many of the server's tool results the CLI sent back cut, per the ledger's last
    model request that recorded them (it resends the whole history); None without one."""
    if requests is None:
        return None
    model = [
        r
        for r in requests
        if is_model_request(r) and r.request_index >= 0 and r.tool_results_cut is not None
    ]
    if not model:
        return None
    last = max(model, key=lambda r: r.request_index)
    return sum(_is_server_tool(name, server_name) for name in last.tool_results_cut or ())


def tool_outcomes(
    seen: ToolCallsSeen | None, requests: Sequence[RequestRow] | None, server_name: str
) -> ToolOutcomes:
    """The episode's :class:`ToolOutcomes`: calls and errors from the transcript, the
    oversized count from the ledger (each None when its source was not readable)."""
    return ToolOutcomes(
        calls=seen.calls if seen is not None else None,
        errors=seen.errors if seen is not None else None,
        oversized=count_oversized(requests, server_name),
    )


def _model_rows(requests: Sequence[RequestRow]) -> list[RequestRow]:
    return sorted(
        (r for r in requests if is_model_request(r) and r.request_index >= 0),
        key=lambda r: r.request_index,
    )


def _offered(requests: Sequence[RequestRow], server_name: str) -> list[bool] | None:
    """Per model request (in order), whether it offered the server; None without any."""
    return [server_offered(r, server_name) for r in _model_rows(requests)] or None


def definition_tokens(requests: Sequence[RequestRow], server_name: str) -> tuple[int, ...] | None:
    """Per model request (in order), the tokens it carried of the server, from the ledger's
    ``mcp_definition_tokens`` (Codex writes ``-`` as ``_``); None when any model request
    was not measured (a ledger written before) or there is none. Null is not zero: 0 means
    measured, nothing of the server carried."""
    names = {server_name, server_name.replace("-", "_")}
    out = []
    for row in _model_rows(requests):
        if row.mcp_definition_tokens is None:
            return None
        out.append(sum(n for s, n in row.mcp_definition_tokens.items() if s in names))
    return tuple(out) or None


def judge_intervention(
    *,
    arm: str,
    server_name: str,
    requests: Sequence[RequestRow] | None,
    report: ServerReport | None,
) -> InterventionHealth | None:
    """The treated episode's status (None for the baseline, or when nothing was observed).

    The CLI's report decides a start failure, a timeout or an exit; then the ledger
    decides: never offered is not loaded, offered then dropped is an exit, offered is
    loaded. With no model request in the ledger (or no ledger), a report of a connection
    is ``loaded``, else the status stays unknown (None)."""
    if arm == BASELINE:
        return None
    health = _judge(server_name, requests, report)
    if health is None or requests is None:
        return health
    return replace(health, definition_tokens=definition_tokens(requests, server_name))


def _judge(
    server_name: str, requests: Sequence[RequestRow] | None, report: ServerReport | None
) -> InterventionHealth | None:
    said = report.detail if report is not None and report.detail else None
    if report is not None and report.connection == "timeout":
        return InterventionHealth(
            InterventionStatus.TIMEOUT, said or "the handshake missed the startup timeout"
        )
    if report is not None and report.connection == "start-failed":
        return InterventionHealth(
            InterventionStatus.START_FAILED, said or "the CLI could not start the server"
        )
    if report is not None and report.exited:
        return InterventionHealth(
            InterventionStatus.EXITED, said or "the server went away mid-episode"
        )
    offered = _offered(requests, server_name) if requests is not None else None
    if offered is None:
        if report is not None and report.connection == "connected":
            return InterventionHealth(
                InterventionStatus.LOADED, "the CLI connected to the server (no model request)"
            )
        return None
    n = len(offered)
    if not any(offered):
        return InterventionHealth(
            InterventionStatus.NOT_LOADED,
            f"none of the {n} model requests offered a tool of '{server_name}'"
            + (f" ({said})" if said else ""),
        )
    first = offered.index(True)
    if not all(offered[first:]):
        gone = offered.index(False, first)
        return InterventionHealth(
            InterventionStatus.EXITED,
            f"'{server_name}' was offered from request {first} and missing from request {gone}",
        )
    return InterventionHealth(
        InterventionStatus.LOADED,
        f"{sum(offered)} of {n} model requests offered '{server_name}'",
    )


def count_intervention_health(records: Sequence[EpisodeRecord]) -> dict[str, object] | None:
    """``report.json`` -> ``meta.intervention_health``: of the treated episodes, how many
    were judged, how many loaded the intervention and how many did not, by status (each
    of those excluded from effects). None when no treated episode was judged (the
    simulator's fixed treatment, runs recorded before): unknown, never "all loaded"."""
    treated = [r for r in records if r.arm != BASELINE]
    judged = [r for r in treated if r.intervention_status is not None]
    if not judged:
        return None
    faults: dict[str, int] = {}
    for record in judged:
        if record.intervention_status != InterventionStatus.LOADED.value:
            status = str(record.intervention_status)
            faults[status] = faults.get(status, 0) + 1
    return {
        "treated": len(treated),
        "judged": len(judged),
        "loaded": len(judged) - sum(faults.values()),
        "not_there": dict(sorted(faults.items(), key=lambda kv: (-kv[1], kv[0]))),
        "tools": _sum_tools(judged),
    }


def _sum_tools(records: Sequence[EpisodeRecord]) -> dict[str, int | None]:
    """The intervention's tool calls, errors and oversized results summed over the
    episodes where each was read, with how many those were (``*_read``); a count no
    episode read is None (unknown), never 0. Graded episodes all: a tool's error or an
    oversized payload is the intervention's behaviour, not a reason to exclude."""
    out: dict[str, int | None] = {}
    for key in ("calls", "errors", "oversized"):
        read = [
            getattr(r.intervention_tools, key)
            for r in records
            if r.intervention_tools is not None and getattr(r.intervention_tools, key) is not None
        ]
        out[key] = sum(read) if read else None
        out[f"{key}_read"] = len(read)
    return out


__all__ = [
    "INTERVENTION_FAULTS",
    "InterventionHealth",
    "InterventionStatus",
    "ServerReport",
    "ToolCallsSeen",
    "ToolOutcomes",
    "count_intervention_health",
    "count_oversized",
    "definition_tokens",
    "judge_intervention",
    "server_offered",
    "tool_outcomes",
]
