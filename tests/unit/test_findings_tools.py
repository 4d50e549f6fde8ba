"""recall / wiki_write / rate_finding over the real stdio server (issue 18, items 1-2).

The server is the real ``token-optimizer mcp`` process; the graph, the evidence log and
the gate are the files it writes. Nothing is mocked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pairlab.adapters.backends.finding_seeds import seed_graph
from pairlab.core.findings.contract import CONTRACT_FIELDS
from pairlab.core.findings.retrieval import holdout_draw
from pairlab.core.schemas.catalog import SeedFinding
from pairlab.intervention.finding_tools import NOTHING
from tests.intervention_harness import EpisodeDirs, ServerProcess, text_of

QUERY = "In stats.py, median() returns the wrong value for even lists; fix median"
GOOD: dict[str, Any] = {
    "claim": "median() in stats.py sorts a copy and averages the two middle values",
    "anchors": ["stats.py#median"],
    "evidence": "read stats.py: median sorts then indexes the middle",
    "applicability": "when changing median or its tests",
    "confidenceLabel": "verified",
    "scope": "project",
    "invalidators": ["median() is rewritten"],
}
BAD_VALUES: dict[str, Any] = {
    "claim": "  ",
    "anchors": ["missing.py"],
    "evidence": "",
    "applicability": None,
    "confidenceLabel": "certain",
    "scope": "universe",
    "invalidators": [],
}


def _dirs(tmp_path: Path) -> EpisodeDirs:
    dirs = EpisodeDirs(tmp_path / "ep")
    (dirs.workspace / "stats.py").write_text(
        "def median(xs):\n    xs = sorted(xs)\n    return xs[len(xs) // 2]\n"
    )
    return dirs


def _server(dirs: EpisodeDirs, arm: str, graph: Path, **env: str) -> ServerProcess:
    server = ServerProcess(
        dirs.env(arm, PAIRLAB_GRAPH_DIR=str(graph), PAIRLAB_PAIR_ID="run:task:0", **env),
        dirs.workspace,
    )
    server.handshake()
    return server


def _events(dirs: EpisodeDirs, *, calls: bool = False) -> list[dict[str, Any]]:
    """The evidence log's events (the per-call ``call`` events only when asked)."""
    path = dirs.state / "evidence-log.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
    return [r for r in rows if calls or r["event"] != "call"]


def _graph(graph: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (graph / "findings.jsonl").read_text().splitlines()]


def _error(reply: dict[str, Any]) -> str:
    assert reply["result"]["isError"] is True, reply
    return text_of(reply)


@pytest.mark.parametrize("field", CONTRACT_FIELDS)
def test_wiki_write_refuses_each_contract_field_by_name(tmp_path: Path, field: str) -> None:
    dirs, graph = _dirs(tmp_path), tmp_path / "graph"
    server = _server(dirs, "full", graph)
    message = _error(server.call("wiki_write", {**GOOD, field: BAD_VALUES[field]}))
    server.close()
    assert message.startswith(f"wiki_write refused: {field}:"), message
    assert not (graph / "findings.jsonl").exists()  # nothing written
    assert [(e["event"], e["field"]) for e in _events(dirs)] == [("refusal", field)]


def test_an_anchor_symbol_must_exist(tmp_path: Path) -> None:
    dirs, graph = _dirs(tmp_path), tmp_path / "graph"
    server = _server(dirs, "full", graph)
    message = _error(server.call("wiki_write", {**GOOD, "anchors": ["stats.py#mean"]}))
    outside = _error(server.call("wiki_write", {**GOOD, "anchors": ["../../etc/passwd"]}))
    server.close()
    assert "anchors: stats.py#mean: symbol 'mean' does not occur" in message
    assert "outside the workspace" in outside


def test_exact_normalized_duplicates_collapse_to_one_active_finding(tmp_path: Path) -> None:
    dirs, graph = _dirs(tmp_path), tmp_path / "graph"
    server = _server(dirs, "full", graph)
    first = text_of(server.call("wiki_write", GOOD, **{"claudecode/toolUseId": "toolu_a"}))
    shouted = {
        **GOOD,
        "claim": "  MEDIAN() in stats.py   sorts a copy and averages the two middle values",
        "evidence": "other words",
        "confidenceLabel": "probable",
    }
    second = text_of(server.call("wiki_write", shouted))
    other = text_of(server.call("wiki_write", {**GOOD, "scope": "global"}))
    server.close()
    fid = first.split()[-1].rstrip(".")
    assert (
        fid.startswith("f-")
        and second == f"Duplicate of {fid}: collapsed into the existing active finding."
    )
    assert (
        other.startswith("Recorded finding") and fid not in other
    )  # another scope: another finding
    events = _graph(graph)
    assert [e["event"] for e in events] == ["finding", "duplicate", "finding"]
    log = _events(dirs)
    assert log[0]["toolCallId"] == "toolu_a" and log[1]["toolCallId"] is None  # the client's own id
    calls = [e for e in _events(dirs, calls=True) if e["event"] == "call"]
    assert [(c["tool"], c["toolCallId"], c["isError"]) for c in calls] == [
        ("wiki_write", "toolu_a", False),
        ("wiki_write", None, False),
        ("wiki_write", None, False),
    ]


def _plant(dirs: EpisodeDirs, graph: Path, *seeds: SeedFinding, share: float = 0.0) -> list[str]:
    return seed_graph(
        graph, dirs.workspace, dirs.workspace, seeds, holdout_share=share, holdout_seed="7"
    )


MEDIAN = SeedFinding(
    id="median",
    claim="median() in stats.py indexes the middle of a sorted copy",
    anchors=["stats.py#median"],
    applicability="fixing median in stats.py",
    confidence_label="verified",
)


def test_recall_delivers_once_per_session_and_an_anchor_edit_marks_the_finding_stale(
    tmp_path: Path,
) -> None:
    dirs, graph = _dirs(tmp_path), tmp_path / "graph"
    (fid,) = _plant(dirs, graph, MEDIAN)
    (dirs.workspace / "stats.py").write_text("def median(xs):\n    return 0\n")  # anchor edit
    server = _server(dirs, "retrieval", graph, CLAUDE_CODE_SESSION_ID="s-1")
    text = text_of(server.call("recall", {"query": QUERY}, **{"claudecode/toolUseId": "toolu_r"}))
    again = text_of(server.call("recall", {"query": QUERY}))
    server.close()
    assert f"[{fid}]" in text and "STALE: changed since written: stats.py" in text
    assert "once-per-session" in again and fid not in again
    recall, delivery, gated = _events(dirs)
    assert (recall["event"], delivery["event"], gated["event"]) == ("recall", "delivery", "gated")
    assert delivery["toolCallId"] == "toolu_r" and delivery["injectionId"] in text
    assert delivery["findings"] == [
        {
            "findingId": fid,
            "tokens": delivery["findings"][0]["tokens"],
            "stale": True,
            "staleAnchors": ["stats.py"],
        }
    ]
    assert delivery["deliveredTokens"] > delivery["findings"][0]["tokens"] > 0


def test_a_new_session_within_the_cooldown_gets_nothing(tmp_path: Path) -> None:
    dirs, graph = _dirs(tmp_path), tmp_path / "graph"
    _plant(dirs, graph, MEDIAN)
    for session, expected in (("s-1", "open"), ("s-2", "cooldown")):
        server = _server(dirs, "retrieval", graph, CLAUDE_CODE_SESSION_ID=session)
        text = text_of(server.call("recall", {"query": QUERY}))
        server.close()
        assert ("cooldown" in text) is (expected == "cooldown")
    assert _events(dirs)[-1] == {**_events(dirs)[-1], "event": "gated", "gate": "cooldown"}


def test_a_held_out_finding_is_logged_with_its_shadow_cost_and_not_shown(tmp_path: Path) -> None:
    dirs, graph = _dirs(tmp_path), tmp_path / "graph"
    (fid,) = _plant(dirs, graph, MEDIAN, share=1.0)
    server = _server(dirs, "retrieval", graph)
    text = text_of(server.call("recall", {"query": QUERY}))
    server.close()
    assert text == NOTHING
    recall, holdout = _events(dirs)
    assert holdout["event"] == "holdout" and holdout["findings"][0]["findingId"] == fid
    assert holdout["shadowTokens"] == holdout["findings"][0]["shadowTokens"] > 0
    assert recall["candidates"][0]["eligible"] is True


def test_the_holdout_share_is_seeded_per_pair(tmp_path: Path) -> None:
    draws = [holdout_draw("7", f"run:task:{i}", "f-x") for i in range(400)]
    assert draws == [holdout_draw("7", f"run:task:{i}", "f-x") for i in range(400)]
    assert 0.4 < sum(d < 0.5 for d in draws) / 400 < 0.6


def test_an_irrelevant_or_speculative_finding_is_not_worth_its_cost(tmp_path: Path) -> None:
    dirs, graph = _dirs(tmp_path), tmp_path / "graph"
    off = SeedFinding(
        id="off", claim="The deploy pipeline uses blue green releases", anchors=["stats.py"]
    )
    _plant(dirs, graph, off)
    server = _server(dirs, "retrieval", graph)
    assert text_of(server.call("recall", {"query": QUERY})) == NOTHING
    server.close()
    (recall,) = _events(dirs)
    assert recall["candidates"][0]["eligible"] is False


def test_two_harmful_ratings_quarantine_a_finding_it_stays_in_the_audit_trail(
    tmp_path: Path,
) -> None:
    graph = tmp_path / "graph"
    seen: list[bool] = []
    for episode in range(3):  # the graph carried across episodes; fresh state each time
        dirs = _dirs(tmp_path / f"e{episode}")
        if episode == 0:
            (fid,) = _plant(dirs, graph, MEDIAN)
        server = _server(dirs, "retrieval", graph)
        text = text_of(server.call("recall", {"query": QUERY}))
        seen.append(fid in text)
        if fid in text:
            reply = text_of(server.call("rate_finding", {"findingId": fid, "rating": "harmful"}))
            assert ("quarantined" in reply) is (episode == 1)
        server.close()
    assert seen == [True, True, False]  # never delivered after the quarantine
    kinds = [e["event"] for e in _graph(graph)]
    assert kinds == ["finding", "rating", "rating", "quarantine"]
    recall = _events(dirs)[0]
    assert recall["quarantinedSkipped"] == [fid] and recall["candidates"] == []


@pytest.mark.parametrize(
    ("arm", "tools"),
    [
        ("optimizer", {"read_file", "expand"}),
        ("retrieval", {"read_file", "expand", "recall", "rate_finding"}),
        ("full", {"read_file", "expand", "recall", "rate_finding", "wiki_write"}),
    ],
)
def test_tools_per_arm(tmp_path: Path, arm: str, tools: set[str]) -> None:
    dirs = _dirs(tmp_path)
    server = _server(dirs, arm, tmp_path / "graph")
    listed = {t["name"] for t in server.request("tools/list")["result"]["tools"]}
    server.close()
    assert listed == tools
