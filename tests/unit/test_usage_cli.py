"""``pairlab usage``: JSON shape, --per-file, directory scan, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import cli_exit

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "usage"
KEYS = {
    "provider",
    "vector",
    "api_calls",
    "by_model",
    "sidechain_vector",
    "cli_version",
    "session_id",
    "web_search_requests",
    "provider_reported_cost_usd",
    "quota_observations",
    "provenance",
}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    return cli_exit(list(args)), capsys.readouterr().out


def test_usage_json_is_one_episode(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "usage", "codex", str(FIX / "codex" / "forked"), "--json")
    assert code == 0
    payload = json.loads(out)
    assert set(payload) >= KEYS
    assert payload["vector"]["output"] == 700
    assert payload["vector"]["cache_write_generic"] is None
    assert payload["provenance"]["replay"] == 2


def test_usage_per_file_reads_each_file_alone(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(
        capsys, "usage", "claude", str(FIX / "claude" / "subagent_replay"), "--json", "--per-file"
    )
    assert code == 0
    reports = json.loads(out)
    assert len(reports) == 2
    # each file alone: the replayed parent message is counted in both
    assert sorted(r["vector"]["output"] for r in reports) == [180 + 25, 180 + 60 + 33]


def test_usage_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "usage", "gemini", str(FIX / "gemini" / "json_output"))
    assert code == 0
    assert "output=704" in out and "weak-zero=2" in out


def test_usage_errors_exit_2_with_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "usage", "cursor", str(FIX), "--json")
    assert code == 2 and json.loads(out)["reason_code"] == "invalid-input"
    code, out = run(capsys, "usage", "claude", "/nonexistent/x.jsonl", "--json")
    assert code == 2 and json.loads(out)["reason_code"] == "not-found"
