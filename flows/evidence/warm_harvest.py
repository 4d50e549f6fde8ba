"""Claim 4's harvest session (issue 18): one full-arm episode of the harvest task, its
findings graph frozen into the run dir and hashed, before the cold and warm strata run.

``warm-graph.jsonl`` is the graph file the harvest episode left (``collected/graph``);
``warm.json`` records the harvest episode, the graph's SHA-256 and the findings in it.
A resumed run reuses a frozen graph whose hash still matches; the harvest episode's own
record is kept in ``harvest/record.json`` (it is not a pair: never in the analysis).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from pairlab.adapters.run.directory import RunDir
from pairlab.core.errors import ExecutionError, ReasonCode
from pairlab.core.findings.warm_stratum import HARVEST
from pairlab.core.schedule import PlannedEpisode
from pairlab.core.schemas.episode import EpisodeRecord, make_episode_id, make_pair_id

GRAPH_NAME = "warm-graph.jsonl"
WARM_JSON = "warm.json"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def harvest_graph(
    task_id: str, run_dir: RunDir, execute: Callable[[PlannedEpisode], EpisodeRecord]
) -> Path:
    frozen = run_dir.path / GRAPH_NAME
    meta = run_dir.path / WARM_JSON
    if (
        frozen.is_file()
        and meta.is_file()
        and json.loads(meta.read_text()).get("graphSha256") == _sha256(frozen)
    ):
        return frozen
    pair_id = make_pair_id(f"{run_dir.run_id}:{HARVEST}", task_id, 0)
    planned = PlannedEpisode(
        task_id=task_id,
        repetition=0,
        order=0,
        arm="full",
        pair_id=pair_id,
        episode_id=make_episode_id(pair_id, "full"),
        stratum=HARVEST,
    )
    record = execute(planned)
    graph = run_dir.episode_dir(planned.episode_id) / "collected" / "graph" / "findings.jsonl"
    if not graph.is_file():
        raise ExecutionError(
            f"the harvest session {planned.episode_id} left no findings graph ({graph})",
            reason=ReasonCode.EXECUTION_FAILED,
        )
    shutil.copyfile(graph, frozen)
    written = [
        e["findingId"]
        for line in frozen.read_text().splitlines()
        if (e := json.loads(line)).get("event") == "finding" and e.get("source") == "wiki_write"
    ]
    (run_dir.path / HARVEST).mkdir(exist_ok=True)
    (run_dir.path / HARVEST / "record.json").write_text(record.model_dump_json(by_alias=True))
    meta.write_text(
        json.dumps(
            {
                "harvestEpisodeId": planned.episode_id,
                "harvestTask": task_id,
                "graphSha256": _sha256(frozen),
                "harvestedFindingIds": written,
                "harvestCorrect": record.correct,
            },
            indent=2,
        )
    )
    return frozen
