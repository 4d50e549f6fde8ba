"""The episode's evidence log: ``$PAIRLAB_STATE_DIR/evidence-log.jsonl``, one event a line.

Every delivery, holdout, gated recall, write, duplicate, refusal, rating and
quarantine the intervention makes is an event here, with the client's identity of
the tool call that caused it (``sessionId``; ``toolCallId`` = the client's own id of
the call -- Claude's tool_use id, Codex's call_id -- or null when the client sent
none; ``rpcId`` = the ledger's identity of the call). pairlab reads it after the
episode (pairlab.core.findings.evidence) for the record's finding fields and joins.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from pairlab.intervention.graph_store import append_jsonl, locked, now_iso
from pairlab.intervention.ledger_rows import RequestIdentity

EVIDENCE_LOG_FILE: Final = "evidence-log.jsonl"


class EvidenceLog:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / EVIDENCE_LOG_FILE

    def append(self, identity: RequestIdentity, tool: str, events: list[dict[str, Any]]) -> None:
        stamped = [
            {
                **event,
                "at": now_iso(),
                "tool": tool,
                "processId": identity.process_id,
                "sessionId": identity.session_id,
                "rpcId": identity.rpc_id,
                "toolCallId": identity.client_call_id,
            }
            for event in events
        ]
        with locked(self.path):
            append_jsonl(self.path, stamped)
