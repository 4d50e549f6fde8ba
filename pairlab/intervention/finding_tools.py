"""``recall`` (retrieval and full arms), ``wiki_write`` (full arm) and ``rate_finding``
(retrieval and full): the findings graph through MCP.

* ``recall(query)`` -- behind the once-per-session gate: every active (not quarantined)
  finding of the episode's graph is scored (pairlab.core.findings.retrieval); eligible
  ones are delivered or, for a seeded share, held out: a held-out finding is not
  shown (the answer reads as if there were none) but its id and the tokens it would
  have cost are logged. Stale findings (an anchored file changed) are scored with
  their risk and flagged when delivered. A ``project``-scoped finding none of whose
  anchors exists in this workspace belongs to another project: not a candidate
  (``organization``/``global`` ones are, deliberately chosen for cross-project reuse).
* ``wiki_write(...)`` -- the semantic finding contract (pairlab.core.findings.contract);
  refusals name the failing field; an exact normalized duplicate collapses into the
  existing finding.
* ``rate_finding(findingId, rating)`` -- helpful | neutral | harmful; the second
  harmful rating quarantines the finding (still in the graph and its audit trail).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from pairlab.core.findings.contract import (
    CONFIDENCE_LABELS,
    SCOPES,
    ContractRefusal,
    validate_finding,
)
from pairlab.core.findings.graph import (
    RATINGS,
    FindingState,
    GraphState,
    needs_quarantine,
    stale_anchors,
)
from pairlab.core.findings.retrieval import Scored, score, select
from pairlab.intervention.evidence_log import EvidenceLog
from pairlab.intervention.graph_store import GraphStore, locked, now_iso
from pairlab.intervention.retrieval_gate import RetrievalGate
from pairlab.intervention.tools import Tool, ToolCall, ToolContext, ToolFailure

RETRIEVAL_ARMS: Final = frozenset({"retrieval", "full"})
HARVEST_ARMS: Final = frozenset({"full"})
NOTHING: Final = "No finding to deliver for this task."


def _stores(context: ToolContext) -> tuple[GraphStore, EvidenceLog]:
    settings = context.settings
    if settings.graph_dir is None or settings.state_dir is None:
        raise ToolFailure("this server has no findings graph (PAIRLAB_GRAPH_DIR) configured")
    store = GraphStore(settings.graph_dir, settings.workspace_root, settings.workdir)
    return store, EvidenceLog(settings.state_dir)


def render(finding: FindingState, stale: list[str]) -> str:
    d = finding.draft
    lines = [
        f"[{finding.finding_id}] ({d.confidence_label}, {d.scope}) {d.claim}",
        f"  anchors: {', '.join(a.label for a in d.anchors)}",
        f"  applicability: {d.applicability}",
        f"  evidence: {d.evidence}",
        f"  invalidators: {'; '.join(d.invalidators)}",
    ]
    if stale:
        lines.append(f"  STALE: changed since written: {', '.join(stale)}")
    return "\n".join(lines)


@dataclass
class _Candidates:
    """The episode's active findings as recall candidates: scored, rendered, and those
    left out as another project's."""

    scored: list[Scored] = field(default_factory=list)
    blocks: dict[str, str] = field(default_factory=dict)
    stale_of: dict[str, list[str]] = field(default_factory=dict)
    out_of_scope: list[str] = field(default_factory=list)


def _candidates(
    context: ToolContext, store: GraphStore, state: GraphState, query: str
) -> _Candidates:
    found = _Candidates()
    now = datetime.now(UTC)
    for finding in state.active():
        hashes = {path: store.file_hash(path) for path in finding.anchor_hashes}
        if finding.draft.scope == "project" and all(h is None for h in hashes.values()):
            found.out_of_scope.append(finding.finding_id)  # another project's finding
            continue
        stale = stale_anchors(finding, hashes.get)
        block = render(finding, stale)
        found.blocks[finding.finding_id], found.stale_of[finding.finding_id] = block, stale
        found.scored.append(
            score(finding, query, now=now, stale=bool(stale), cost_tokens=context.count(block))
        )
    return found


def _delivery(
    context: ToolContext, call: ToolCall, delivered: tuple[Scored, ...], found: _Candidates
) -> tuple[str, dict[str, Any]]:
    """The text answering ``recall`` (the delivered findings under an injection id) and
    its ``delivery`` event."""
    ids = [s.finding_id for s in delivered]
    identity = call.identity
    digest = hashlib.sha256(f"{identity.session_id}|{identity.rpc_id}|{','.join(ids)}".encode())
    injection = "inj-" + digest.hexdigest()[:16]
    text = "\n".join(
        [
            f"Findings for this task (injection {injection}):",
            *(found.blocks[i] for i in ids),
            "Rate a finding with rate_finding when it proved helpful or harmful.",
        ]
    )
    event = {
        "event": "delivery",
        "injectionId": injection,
        "findings": [
            {
                "findingId": s.finding_id,
                "tokens": s.cost_tokens,
                "stale": s.stale,
                "staleAnchors": found.stale_of[s.finding_id],
            }
            for s in delivered
        ],
        "deliveredTokens": context.count(text),
    }
    return text, event


def _holdout_event(held_out: tuple[Scored, ...]) -> dict[str, Any]:
    return {
        "event": "holdout",
        "findings": [{"findingId": s.finding_id, "shadowTokens": s.cost_tokens} for s in held_out],
        "shadowTokens": sum(s.cost_tokens for s in held_out),
    }


def recall(context: ToolContext, call: ToolCall) -> str:
    """Score the active findings, deliver the chosen ones or hold them out (see the module
    docstring); every step is logged to the evidence log."""
    store, log = _stores(context)
    query = call.arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolFailure("query must be a non-empty string: what the task is about")
    gate = RetrievalGate(log.path.parent).admit(call.identity.session_id)
    if gate != "open":
        log.append(call.identity, call.name, [{"event": "gated", "gate": gate}])
        return f"Findings were already served in this episode ({gate}); none delivered again."
    state = store.state()
    found = _candidates(context, store, state, query)
    settings = store.settings()
    unit = context.settings.pair_id or context.settings.episode_id or call.identity.session_id
    chosen = select(
        found.scored, seed=settings.holdout_seed, unit=unit, holdout_share=settings.holdout_share
    )
    quarantined = sorted(f.finding_id for f in state.findings.values() if f.quarantined)
    events: list[dict[str, Any]] = [
        {
            "event": "recall",
            "holdoutShare": settings.holdout_share,
            "candidates": [s.to_json() for s in found.scored],
            "outOfScope": found.out_of_scope,
            "quarantinedSkipped": quarantined,
        }
    ]
    text = NOTHING
    if chosen.delivered:
        text, delivery = _delivery(context, call, chosen.delivered, found)
        events.append(delivery)
    if chosen.held_out:
        events.append(_holdout_event(chosen.held_out))
    log.append(call.identity, call.name, events)
    return text


def wiki_write(context: ToolContext, call: ToolCall) -> str:
    store, log = _stores(context)
    try:
        draft = validate_finding(call.arguments, store.anchor_problem)
    except ContractRefusal as exc:
        log.append(call.identity, call.name, [{"event": "refusal", "field": exc.field}])
        raise ToolFailure(f"wiki_write refused: {exc}") from exc
    fid = draft.finding_id
    with locked(store.path):
        known = fid in store.state().findings
        event: dict[str, Any] = {
            "event": "duplicate" if known else "finding",
            "findingId": fid,
            "at": now_iso(),
            "source": "wiki_write",
            "sessionId": call.identity.session_id,
            "toolCallId": call.identity.client_call_id,
        }
        if not known:
            event["finding"] = draft.to_json()
            event["anchorHashes"] = {a.path: store.file_hash(a.path) for a in draft.anchors}
        store.append([event])
    log.append(call.identity, call.name, [{"event": event["event"], "findingId": fid}])
    if known:
        return f"Duplicate of {fid}: collapsed into the existing active finding."
    return f"Recorded finding {fid}."


def rate_finding(context: ToolContext, call: ToolCall) -> str:
    store, log = _stores(context)
    fid, rating = call.arguments.get("findingId"), call.arguments.get("rating")
    if rating not in RATINGS:
        raise ToolFailure(f"rating must be one of {', '.join(RATINGS)}")
    reason = call.arguments.get("reason")
    with locked(store.path):
        state = store.state()
        if not isinstance(fid, str) or fid not in state.findings:
            raise ToolFailure(f"unknown finding {fid!r}")
        base = {"findingId": fid, "at": now_iso(), "sessionId": call.identity.session_id}
        store.append([{**base, "event": "rating", "rating": rating, "reason": reason}])
        finding = store.state().findings[fid]
        quarantine = needs_quarantine(finding)
        if quarantine:
            store.append([{**base, "event": "quarantine", "harmfulRatings": finding.harmful}])
    events: list[dict[str, Any]] = [{"event": "rating", "findingId": fid, "rating": rating}]
    if quarantine:
        events.append({"event": "quarantine", "findingId": fid, "harmfulRatings": finding.harmful})
    log.append(call.identity, call.name, events)
    suffix = " It is quarantined from automatic retrieval." if quarantine else ""
    return f"Rated {fid} {rating}.{suffix}"


_STR = {"type": "string"}
FINDING_TOOLS: Final = (
    Tool(
        name="recall",
        title="Recall findings about this task",
        description=(
            "Findings earlier sessions recorded about this project, relevant to the query "
            "(once per session). Each names its anchors, evidence and when it applies."
        ),
        input_schema={
            "type": "object",
            "properties": {"query": {**_STR, "description": "what the task is about"}},
            "required": ["query"],
            "additionalProperties": False,
        },
        arms=RETRIEVAL_ARMS,
        handler=recall,
    ),
    Tool(
        name="wiki_write",
        title="Record a durable finding",
        description=(
            "Record a finding for later sessions: a compact claim, anchors (real files or "
            "'path#symbol'), the evidence, when it applies, a confidence label, a scope "
            "(project by default) and what would invalidate it."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "claim": _STR,
                "anchors": {"type": "array", "items": _STR, "minItems": 1},
                "evidence": _STR,
                "applicability": _STR,
                "confidenceLabel": {"type": "string", "enum": list(CONFIDENCE_LABELS)},
                "scope": {"type": "string", "enum": list(SCOPES)},
                "invalidators": {"type": "array", "items": _STR, "minItems": 1},
            },
            "required": [
                "claim",
                "anchors",
                "evidence",
                "applicability",
                "confidenceLabel",
                "invalidators",
            ],
        },
        arms=HARVEST_ARMS,
        handler=wiki_write,
        read_only=False,
    ),
    Tool(
        name="rate_finding",
        title="Rate a delivered finding",
        description="Say whether a recalled finding proved helpful, neutral or harmful.",
        input_schema={
            "type": "object",
            "properties": {
                "findingId": _STR,
                "rating": {"type": "string", "enum": list(RATINGS)},
                "reason": _STR,
            },
            "required": ["findingId", "rating"],
            "additionalProperties": False,
        },
        arms=RETRIEVAL_ARMS,
        handler=rate_finding,
        read_only=False,
    ),
)
