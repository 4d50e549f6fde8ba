"""``pairlab audit-savings`` over a ledger and a run directory, and ``pairlab ledger record``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pairlab.adapters.mcp_ledger.db import LedgerWriter, read_ledger
from tests.support import cli_exit
from tests.unit.ledger_factory import expansion, reduction

JSON_KEYS = {
    "verified_net_tokens",
    "gross_reduction_tokens",
    "expansion_debit_tokens",
    "observed_returned_tokens",
    "excluded_count",
    "excluded_by_reason",
    "by_tool",
    "largest_excluded",
    "tokenizer",
}


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    return cli_exit(list(args)), capsys.readouterr().out


def _episode(run: Path, episode_id: str, *rows: dict[str, Any]) -> None:
    with LedgerWriter(run / "episodes" / episode_id / "ledger.db") as writer:
        for row in rows:
            writer.record(row)


def test_audit_single_ledger_json_and_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "ledger.db"
    big_claim = reduction(rpc_id="7", tool="summarize", provenance="tool-reported")
    with LedgerWriter(db) as writer:
        writer.record(reduction())
        writer.record(big_claim)
        writer.record(reduction(before="a b c " * 20, rpc_id="8", provenance="historical"))
    code, out = run_cli(capsys, "audit-savings", str(db), "--json")
    assert code == 0
    report = json.loads(out)
    assert set(report) >= JSON_KEYS
    assert report["excluded_count"] == 2
    assert report["excluded_by_reason"] == {
        "provenance-historical": 1,
        "provenance-tool-reported": 1,
    }
    largest = report["largest_excluded"]
    assert [row["rpc_id"] for row in largest] == ["7", "8"]  # biggest claim first
    assert largest[0]["claimed_tokens"] == big_claim["saved_tokens"]
    assert "not a provider invoice" in report["tokenizer"]["note"]
    assert "by_arm" not in report
    code, text = run_cli(capsys, "audit-savings", str(db))
    assert code == 0
    assert "verified net MCP transport avoided" in text
    assert "provenance-tool-reported: 1 rows" in text
    assert "not a provider invoice" in text


def test_audit_run_directory_per_arm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "runs" / "r1"
    opt = reduction(rpc_id="1")
    full = reduction(before="word " * 400, returned="word " * 10, rpc_id="1", session_id="s-9")
    full_exp = expansion(full, rpc_id="2")
    _episode(run, "r1:t1:0:optimizer", opt)
    _episode(run, "r1:t1:0:full", full, full_exp)
    _episode(run, "r1:t2:0:optimizer", reduction(provenance="historical"))
    (run / "episodes.jsonl").write_text(
        "\n".join(
            json.dumps({"episodeId": e, "arm": e.rsplit(":", 1)[1]})
            for e in ("r1:t1:0:optimizer", "r1:t1:0:full", "r1:t1:0:baseline")
        )
        + "\n"
    )
    code, out = run_cli(capsys, "audit-savings", str(run), "--json")
    assert code == 0
    report = json.loads(out)
    assert report["source"]["kind"] == "run"
    assert report["ledgers"] == 3
    arms = report["by_arm"]
    assert set(arms) == {"optimizer", "full"}
    assert arms["optimizer"]["gross_reduction_tokens"] == opt["saved_tokens"]
    assert arms["optimizer"]["excluded_count"] == 1  # t2's episode: arm from its id
    assert arms["full"]["verified_net_tokens"] == full["saved_tokens"] - full_exp["returned_tokens"]
    expected_net = opt["saved_tokens"] + full["saved_tokens"] - full_exp["returned_tokens"]
    assert report["verified_net_tokens"] == expected_net


def test_audit_of_missing_path_is_invalid_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(capsys, "audit-savings", str(tmp_path / "nothing-here"), "--json")
    assert code == 2
    assert json.loads(out.splitlines()[-1])["reason_code"] == "not-found"


def test_ledger_record_outcomes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "ep" / "ledger.db"
    row = json.dumps(reduction())
    assert run_cli(capsys, "ledger", "record", "--db", str(db), row) == (0, "stored (qualified)\n")
    code, out = run_cli(capsys, "ledger", "record", "--db", str(db), row)
    assert code == 0 and out.startswith("duplicate")
    code, out = run_cli(
        capsys,
        "ledger",
        "record",
        "--db",
        str(db),
        json.dumps(reduction(rpc_id="2", provenance="historical")),
    )
    assert code == 1
    assert out.strip() == "stored (excluded: provenance-historical)"
    code, out = run_cli(
        capsys,
        "ledger",
        "record",
        "--db",
        str(db),
        "--json",
        json.dumps(reduction(rpc_id="3", schema_version=1)),
    )
    assert code == 1
    assert json.loads(out) == {
        "status": "stored",
        "qualified": False,
        "excluded": True,
        "reasons": ["schema-version"],
    }
    for bad in ("{not json", "[1, 2]"):
        code, _ = run_cli(capsys, "ledger", "record", "--db", str(db), bad)
        assert code == 2
    assert len(read_ledger(db).rows) == 3


def test_ledger_ingest_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jsonl = tmp_path / "mcp-ledger.jsonl"
    jsonl.write_text(json.dumps(reduction()) + "\n" + json.dumps(reduction()) + "\n")
    code, out = run_cli(
        capsys, "ledger", "ingest", "--db", str(tmp_path / "l.db"), str(jsonl), "--json"
    )
    assert code == 0
    assert json.loads(out)["duplicates"] == 1
