"""One episode's finding evidence and its tool-call join, from what the intervention logged.

Inputs (read by pairlab.adapters.episode.finding_evidence): the evidence log's events
(``recall``/``delivery``/``holdout``/``gated``/``finding``/``duplicate``/``refusal``/
``rating``/``quarantine``, pairlab.intervention.evidence_log), the MCP ledger rows and
the tool-call ids of the CLI's own transcript (Claude's ``tool_use`` ids, Codex's
``call_id``s).

**Join.** An episode is *MCP-involving* when the intervention logged anything for a
tool call (a ledger row or an evidence event). Its join is ``exact`` when every one of
those calls carries the client's own tool-call id and that id is in the CLI's
transcript: transcript ⇄ MCP call ⇄ ledger row by one id. Otherwise it is the labelled
``fallback`` (episode/anchor: the rows belong to the episode whose state dir held
them), with the first reason: ``no-transcript``, ``client-omitted-tool-call-id``,
``id-not-in-transcript``. An episode without an MCP call has join ``none`` (nothing
to join: not counted in join coverage).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

JoinMethod = Literal["exact", "fallback", "none"]


@dataclass(frozen=True)
class EpisodeEvidence:
    finding_ids: list[str] = field(default_factory=list)
    shadow_finding_ids: list[str] = field(default_factory=list)
    delivered_tokens: int | None = None  # None: no recall answered (not 0)
    shadow_tokens: int | None = None
    injection_id: str | None = None
    tool_call_id: str | None = None
    stale_delivered: list[str] = field(default_factory=list)
    harmful_ratings: int = 0
    quarantined: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    mcp_calls: int = 0
    join_method: JoinMethod = "none"
    join_fallback_reason: str | None = None
    unjoined_call_ids: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "staleDelivered": self.stale_delivered,
            "harmfulRatings": self.harmful_ratings,
            "quarantined": self.quarantined,
            "written": self.written,
            "refusals": self.refusals,
            "mcpCalls": self.mcp_calls,
            "joinFallbackReason": self.join_fallback_reason,
            "unjoinedCallIds": self.unjoined_call_ids,
        }


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _join(
    calls: Mapping[str, str | None], transcript_ids: set[str] | None
) -> tuple[JoinMethod, str | None, list[str]]:
    """calls: rpc id -> the client's own id (None when the client sent none)."""
    if not calls:
        return "none", None, []
    if transcript_ids is None:
        return "fallback", "no-transcript", sorted(calls)
    omitted = sorted(rpc for rpc, client in calls.items() if client is None)
    if omitted:
        return "fallback", "client-omitted-tool-call-id", omitted
    missing = sorted(rpc for rpc in calls if rpc not in transcript_ids)
    if missing:
        return "fallback", "id-not-in-transcript", missing
    return "exact", None, []


def summarize(
    events: Sequence[Mapping[str, Any]],
    ledger_rows: Sequence[Mapping[str, Any]],
    transcript_ids: set[str] | None,
) -> EpisodeEvidence:
    calls: dict[str, str | None] = {}
    for row in ledger_rows:  # a ledger row's rpc_id is the client's id when it sent one
        rpc = row.get("rpc_id")
        if isinstance(rpc, str):
            calls.setdefault(rpc, rpc)
    for event in events:
        rpc = event.get("rpcId")
        if isinstance(rpc, str):
            client = event.get("toolCallId")
            calls[rpc] = client if isinstance(client, str) else None
    delivered: list[str] = []
    held: list[str] = []
    stale: list[str] = []
    quarantined: list[str] = []
    written: list[str] = []
    refusals: list[str] = []
    delivered_tokens: int | None = None
    shadow_tokens: int | None = None
    injection: str | None = None
    tool_call: str | None = None
    harmful = 0
    for event in events:
        kind = event.get("event")
        if kind == "recall":
            delivered_tokens = delivered_tokens or 0
            tool_call = tool_call or event.get("toolCallId")
        elif kind == "delivery":
            delivered_tokens = (delivered_tokens or 0) + int(event.get("deliveredTokens", 0))
            injection = injection or event.get("injectionId")
            for item in event.get("findings", []):
                delivered.append(item["findingId"])
                if item.get("stale"):
                    stale.append(item["findingId"])
        elif kind == "holdout":
            shadow_tokens = (shadow_tokens or 0) + int(event.get("shadowTokens", 0))
            held.extend(item["findingId"] for item in event.get("findings", []))
        elif kind == "rating" and event.get("rating") == "harmful":
            harmful += 1
        elif kind == "quarantine":
            quarantined.append(str(event.get("findingId")))
        elif kind in ("finding", "duplicate"):
            written.append(str(event.get("findingId")))
        elif kind == "refusal":
            refusals.append(str(event.get("field")))
    if delivered_tokens is not None and shadow_tokens is None:
        shadow_tokens = 0  # a recall was answered and held nothing out: observed zero
    method, reason, unjoined = _join(calls, transcript_ids)
    return EpisodeEvidence(
        finding_ids=_unique(delivered),
        shadow_finding_ids=_unique(held),
        delivered_tokens=delivered_tokens,
        shadow_tokens=shadow_tokens,
        injection_id=injection,
        tool_call_id=tool_call,
        stale_delivered=_unique(stale),
        harmful_ratings=harmful,
        quarantined=_unique(quarantined),
        written=_unique(written),
        refusals=refusals,
        mcp_calls=len(calls),
        join_method=method,
        join_fallback_reason=reason,
        unjoined_call_ids=unjoined,
    )
