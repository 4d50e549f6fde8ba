"""Read an episode's finding evidence from its collected files: the intervention's
evidence log and MCP ledger (``state/``) and the tool-call ids of the CLI's transcript
(the profile's usage files: Claude's project JSONL, Codex's rollout)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pairlab.adapters.backends.base import CollectedFiles
from pairlab.core.accounting.ledger_rules import LEDGER_ROWS_FILE
from pairlab.core.findings.evidence import EpisodeEvidence, summarize
from pairlab.intervention.evidence_log import EVIDENCE_LOG_FILE
from pairlab.intervention.graph_store import read_jsonl

# items of a transcript that are tool calls, and where each keeps the call's id
_CALL_TYPES = {
    "tool_use": "id",
    "function_call": "call_id",
    "custom_tool_call": "call_id",
    "tool_search_call": "call_id",
    "mcp_tool_call": "call_id",
}


def _walk(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        key = _CALL_TYPES.get(value.get("type"))  # type: ignore[arg-type]
        if key and isinstance(value.get(key), str):
            yield value[key]
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


def transcript_call_ids(paths: list[Path]) -> set[str] | None:
    """Every tool-call id in the transcript files; None when there is none to read."""
    if not paths:
        return None
    ids: set[str] = set()
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                ids.update(_walk(json.loads(line)))
            except ValueError:
                continue
    return ids


def read_episode_evidence(collected: CollectedFiles, transcripts: list[Path]) -> EpisodeEvidence:
    events: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for path in collected.paths():
        if path.name == EVIDENCE_LOG_FILE:
            events.extend(read_jsonl(path)[0])
        elif path.name == LEDGER_ROWS_FILE:
            rows.extend(read_jsonl(path)[0])
    return summarize(events, rows, transcript_call_ids(transcripts))


def lifecycle_of(client: str, collected: Path, trace_name: str) -> dict[str, Any]:
    """Claim 1's lifecycle certification of one treated episode's collected files."""
    from pairlab.adapters.clients.registry import REAL_CLIS
    from pairlab.core.findings.lifecycle import certify_lifecycle

    state = collected / "state"
    transcript_dir = REAL_CLIS[client].transcript_dir
    transcripts = sorted((collected / "home" / transcript_dir).rglob("*.jsonl"))
    return certify_lifecycle(
        client,
        read_jsonl(state / trace_name)[0],
        read_jsonl(state / EVIDENCE_LOG_FILE)[0],
        transcript_call_ids(transcripts),
    )
