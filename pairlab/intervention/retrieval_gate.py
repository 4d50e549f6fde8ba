"""The persisted once-per-session gate and its one-minute episode cooldown.

``$PAIRLAB_STATE_DIR/retrieval-gate.json`` lists the client sessions that were already
served a recall (delivered or held out alike, so the control condition looks the
same) and when the last one was. A second recall in a served session is gated
(``once-per-session``); a recall in a *new* session less than ``COOLDOWN_S`` after the
last one is gated too (``cooldown``: it backs the session gate up when a client
restarts its MCP server or changes its session id mid-episode)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from pairlab.intervention.graph_store import locked

GATE_FILE: Final = "retrieval-gate.json"
COOLDOWN_S: Final = 60.0


class RetrievalGate:
    def __init__(self, state_dir: Path, cooldown_s: float = COOLDOWN_S) -> None:
        self.path = state_dir / GATE_FILE
        self.cooldown_s = cooldown_s

    def admit(self, session_id: str, now: datetime | None = None) -> str:
        """``open`` (and the session is recorded as served), else the gate that closed it."""
        now = now or datetime.now(UTC)
        with locked(self.path):
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = {}
            sessions = list(data.get("sessions", []))
            if session_id in sessions:
                return "once-per-session"
            last = data.get("lastServedAt")
            if isinstance(last, str):
                try:
                    elapsed = (now - datetime.fromisoformat(last)).total_seconds()
                except ValueError:
                    elapsed = self.cooldown_s
                if 0 <= elapsed < self.cooldown_s:
                    return "cooldown"
            sessions.append(session_id)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"sessions": sessions, "lastServedAt": now.isoformat()}))
            tmp.replace(self.path)
            return "open"
