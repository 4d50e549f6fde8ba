"""Replay what the real Claude Code and Codex sent to the server (tests/fixtures/mcp/).

Every line a real client wrote is fed, verbatim and in order, to a fresh server
over its stdio; each request must get the answer the client got when it was
recorded (same ids, error codes, negotiated version, tools, refusals), and the
ledger rows must carry the client's own tool-call ids.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pairlab.core.accounting.ledger_rules import qualify_row
from tests.intervention_harness import EpisodeDirs, ServerProcess
from tests.support import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "mcp"
BIG_PY_SHA256 = "6932883c0292080e58da5805bd1431fed54e85380e05eb0f6be479fbd97a8872"


def big_py() -> str:
    """The workspace file the recordings read (300 lines, 20 definitions)."""
    lines = []
    for i in range(300):
        if i % 15 == 0:
            lines.append(f"def func_{i}(x, y):\n")
        else:
            lines.append(f"    value_{i} = x * {i} + y  # compute step {i}\n")
    return "".join(lines)


def load_trace(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]


def replay(trace: list[dict[str, Any]], dirs: EpisodeDirs) -> list[tuple[Any, Any]]:
    """(recorded reply, replayed reply) for every request of the trace."""
    recorded = {}
    for entry in trace:
        if entry["dir"] == "out":
            reply = json.loads(entry["line"])
            recorded[json.dumps(reply["id"])] = reply
    server = ServerProcess(dirs.env("optimizer"), dirs.workspace)
    pairs = []
    try:
        for entry in trace:
            if entry["dir"] != "in":
                continue
            message = json.loads(entry["line"])
            server.send_line(entry["line"])
            if "id" in message:
                pairs.append((recorded[json.dumps(message["id"])], server.read_reply()))
    finally:
        code, err = server.close()
    assert code == 0, err
    return pairs


@pytest.mark.parametrize(
    ("trace_name", "client_ids", "session"),
    [
        ("claude-2.1.332.trace.jsonl", ["toolu_0002", "toolu_0004"], None),
        ("codex-0.163.0.trace.jsonl", ["call_3", "call_6"], "01a2323a-042a-75a0-992b-9abcfafa87fe"),
    ],
)
def test_real_client_conversation_replays(
    tmp_path: Path, trace_name: str, client_ids: list[str], session: str | None
) -> None:
    dirs = EpisodeDirs(tmp_path / "ep")
    (dirs.workspace / "src").mkdir()
    (dirs.workspace / "src" / "big.py").write_text(big_py())
    assert hashlib.sha256(big_py().encode()).hexdigest() == BIG_PY_SHA256
    pairs = replay(load_trace(trace_name), dirs)
    assert len(pairs) >= 5
    for recorded, replayed in pairs:
        assert replayed["id"] == recorded["id"]
        assert ("error" in replayed) == ("error" in recorded), (recorded, replayed)
        if "error" in recorded:
            assert replayed["error"]["code"] == recorded["error"]["code"]
            continue
        want, got = recorded["result"], replayed["result"]
        if "protocolVersion" in want:
            assert got["protocolVersion"] == want["protocolVersion"]
            assert got["serverInfo"]["name"] == "token-optimizer"
        elif "tools" in want:
            assert [t["name"] for t in got["tools"]] == [t["name"] for t in want["tools"]]
        else:
            assert got["isError"] == want["isError"]
            got_text, want_text = got["content"][0]["text"], want["content"][0]["text"]
            if want["isError"]:
                assert got_text.startswith("refused:") and want_text.startswith("refused:")
            elif want_text.startswith("[token-optimizer] preview"):
                assert f"expansion reference: sha256:{BIG_PY_SHA256}" in got_text.splitlines()
            else:  # the expansion of lines 2-4
                assert got_text == want_text == "".join(big_py().splitlines(True)[1:4])
    rows = dirs.rows()
    assert [r["rpc_id"] for r in rows] == client_ids
    assert [r["kind"] for r in rows] == ["reduction", "expansion"]
    assert all(qualify_row(r).is_qualified for r in rows)
    if session is not None:
        assert {r["session_id"] for r in rows} == {session}


def test_the_recordings_show_each_clients_handshake() -> None:
    claude = [
        json.loads(e["line"]) for e in load_trace("claude-2.1.332.trace.jsonl") if e["dir"] == "in"
    ]
    assert [m.get("method") for m in claude[:4]] == [
        "server/discover",
        "initialize",
        "notifications/initialized",
        "tools/list",
    ]
    assert claude[1]["params"]["protocolVersion"] == "2025-11-25"
    codex = [
        json.loads(e["line"]) for e in load_trace("codex-0.163.0.trace.jsonl") if e["dir"] == "in"
    ]
    assert (
        codex[0]["method"] == "initialize" and codex[0]["params"]["protocolVersion"] == "2025-06-18"
    )
    calls = [m for m in codex if m.get("method") == "tools/call"]
    assert all(re.fullmatch(r"call_\d+", m["params"]["_meta"]["callId"]) for m in calls)
