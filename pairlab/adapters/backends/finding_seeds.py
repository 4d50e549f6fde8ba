"""Plant a task's catalog findings in an episode's graph directory (retrieval and full arms).

Each :class:`SeedFinding` goes through the same contract ``wiki_write`` enforces (its
anchors must be real files/symbols of the episode's workspace) and is written as a
``finding`` event with ``source: seed`` and the anchors' hashes in the fresh workspace.
``retrieval.json`` carries the run's holdout share and seed. A carried graph (the warm
stratum: frozen and hashed by the run) is copied in first.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.findings.contract import ContractRefusal, validate_finding
from pairlab.core.schemas.catalog import SeedFinding
from pairlab.intervention.graph_store import (
    GRAPH_FILE,
    RETRIEVAL_SETTINGS_FILE,
    GraphStore,
    append_jsonl,
    now_iso,
    read_jsonl,
)

GRAPH_ARMS = frozenset({"retrieval", "full"})


def seed_graph(
    graph_dir: Path,
    workspace_root: Path,
    workdir: Path,
    findings: Sequence[SeedFinding],
    *,
    holdout_share: float,
    holdout_seed: str,
    carried: Path | None = None,
) -> list[str]:
    """Write the graph; returns the planted finding ids (a duplicate of a carried one is skipped)."""
    graph_dir.mkdir(parents=True, exist_ok=True)
    if carried is not None:
        shutil.copyfile(carried, graph_dir / GRAPH_FILE)
    store = GraphStore(graph_dir, workspace_root.resolve(), workdir.resolve())
    known = {e.get("findingId") for e in read_jsonl(store.path)[0]}
    events, ids = [], []
    for seed in findings:
        try:
            draft = validate_finding(
                {
                    "claim": seed.claim,
                    "anchors": list(seed.anchors),
                    "evidence": seed.evidence,
                    "applicability": seed.applicability,
                    "confidenceLabel": seed.confidence_label,
                    "scope": seed.scope,
                    "invalidators": list(seed.invalidators),
                },
                store.anchor_problem,
            )
        except ContractRefusal as exc:
            raise InvalidInputError(
                f"catalog seed finding {seed.id!r} breaks the finding contract: {exc}",
                reason=ReasonCode.INVALID_CATALOG,
            ) from exc
        if draft.finding_id in known:
            continue
        known.add(draft.finding_id)
        ids.append(draft.finding_id)
        events.append(
            {
                "event": "finding",
                "findingId": draft.finding_id,
                "catalogId": seed.id,
                "at": now_iso(),
                "source": "seed",
                "finding": draft.to_json(),
                "anchorHashes": {a.path: store.file_hash(a.path) for a in draft.anchors},
            }
        )
    if events:
        append_jsonl(store.path, events)
    (graph_dir / RETRIEVAL_SETTINGS_FILE).write_text(
        json.dumps({"holdoutShare": holdout_share, "holdoutSeed": holdout_seed}, sort_keys=True)
    )
    return ids
