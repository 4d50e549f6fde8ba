"""The append-only findings graph: events in, current state out (pure).

The graph is a JSONL file of events (pairlab.intervention.graph_store writes it;
nothing is ever rewritten or deleted):

* ``finding`` -- a finding written (``source``: ``seed`` from the catalog, ``wiki_write``
  by the active model), with the SHA-256 of each anchored file when it was written;
* ``duplicate`` -- a write whose normalized finding already exists (collapsed);
* ``rating`` -- ``helpful`` | ``neutral`` | ``harmful`` feedback on a finding;
* ``quarantine`` -- the second harmful rating took the finding out of automatic
  retrieval. It stays in the graph (and :func:`audit_trail`) for good.

A finding is **stale** when the current hash of one of its anchored files differs
from the hash stored when it was written (or the file is gone):
:func:`stale_anchors` compares them through a callback, so the check is the caller's I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pairlab.core.findings.contract import FindingDraft

HARMFUL_QUARANTINE_THRESHOLD: Final = 2
RATINGS: Final = ("helpful", "neutral", "harmful")
EVENT_KINDS: Final = ("finding", "duplicate", "rating", "quarantine")


@dataclass
class FindingState:
    finding_id: str
    draft: FindingDraft
    anchor_hashes: dict[str, str | None]
    written_at: str
    source: str
    helpful: int = 0
    harmful: int = 0
    duplicates: int = 0
    quarantined: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class GraphState:
    findings: dict[str, FindingState] = field(default_factory=dict)
    invalid_lines: int = 0

    def active(self) -> list[FindingState]:
        """Findings automatic retrieval may consider (not quarantined), in write order."""
        return [f for f in self.findings.values() if not f.quarantined]


def fold(events: Iterable[Mapping[str, Any]]) -> GraphState:
    """The graph's state after ``events`` (in file order). Events naming an unknown
    finding or of an unknown kind are counted in ``invalid_lines``, never dropped
    silently."""
    state = GraphState()
    for event in events:
        kind = event.get("event")
        fid = event.get("findingId")
        if kind == "finding" and isinstance(fid, str) and fid not in state.findings:
            hashes = event.get("anchorHashes") or {}
            state.findings[fid] = FindingState(
                finding_id=fid,
                draft=FindingDraft.from_json(event["finding"]),
                anchor_hashes={str(k): (str(v) if v else None) for k, v in hashes.items()},
                written_at=str(event.get("at", "")),
                source=str(event.get("source", "wiki_write")),
                events=[dict(event)],
            )
            continue
        found = state.findings.get(fid) if isinstance(fid, str) else None
        if found is None or kind not in EVENT_KINDS:
            state.invalid_lines += 1
            continue
        found.events.append(dict(event))
        if kind in ("duplicate", "finding"):
            found.duplicates += 1
        elif kind == "rating":
            rating = event.get("rating")
            if rating == "helpful":
                found.helpful += 1
            elif rating == "harmful":
                found.harmful += 1
        elif kind == "quarantine":
            found.quarantined = True
    return state


def needs_quarantine(finding: FindingState) -> bool:
    return not finding.quarantined and finding.harmful >= HARMFUL_QUARANTINE_THRESHOLD


def stale_anchors(finding: FindingState, current_hash: Callable[[str], str | None]) -> list[str]:
    """Anchored paths whose file changed (or vanished) since the finding was written."""
    return sorted(
        path
        for path, written in finding.anchor_hashes.items()
        if written is None or current_hash(path) != written
    )


def audit_trail(state: GraphState) -> list[dict[str, Any]]:
    """Every finding, quarantined ones included, with its counts and events."""
    return [
        {
            "findingId": f.finding_id,
            "claim": f.draft.claim,
            "source": f.source,
            "quarantined": f.quarantined,
            "helpful": f.helpful,
            "harmful": f.harmful,
            "duplicates": f.duplicates,
            "events": [e.get("event") for e in f.events],
        }
        for f in state.findings.values()
    ]
