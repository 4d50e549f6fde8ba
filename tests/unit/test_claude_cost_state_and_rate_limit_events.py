"""Claude Code's cost-state totals (usage a cut stream left off the transcript) and its
stream-json rate_limit_event lines, read by the Claude usage reader; the CLIs' stdout."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pairlab.adapters.clients.claude import claude_final_answer, claude_result_usage
from pairlab.adapters.clients.codex import codex_final_answer, codex_turn_usage
from pairlab.adapters.usage import read_usage
from pairlab.adapters.usage.claude import rate_limit_event_observations
from pairlab.adapters.usage.claude_cost_state import BELOW_TRANSCRIPT, REMAINDER
from pairlab.core.schemas.usage import UsageVector

SESSION = "s-1"


def assistant(mid: str, read: int, write: int, out: int) -> dict[str, Any]:
    return {
        "type": "assistant",
        "sessionId": SESSION,
        "timestamp": "2026-12-01T10:00:00Z",
        "requestId": f"req-{mid}",
        "message": {
            "id": mid,
            "model": "claude-x",
            "usage": {
                "input_tokens": 0,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": write,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": write,
                    "ephemeral_1h_input_tokens": 0,
                },
                "output_tokens": out,
            },
        },
    }


def cost_state(read: int, write: int, out: int) -> dict[str, Any]:
    usage = {
        "inputTokens": 0,
        "outputTokens": out,
        "thinkingTokens": 0,
        "cacheReadInputTokens": read,
        "cacheCreationInputTokens": write,
        "cacheCreationEphemeral5mInputTokens": write,
        "cacheCreationEphemeral1hInputTokens": 0,
    }
    return {"type": "cost-state", "sessionId": SESSION, "modelUsage": {"claude-x": usage}}


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_usage_a_cut_stream_left_off_the_transcript_is_recovered_from_cost_state(
    tmp_path: Path,
) -> None:
    lines = [
        assistant("m1", 0, 1000, 50),
        assistant("m2", 1000, 80, 40),
        cost_state(1000 + 1100, 1000 + 80 + 90, 91),
    ]
    report = read_usage("claude", [write_lines(tmp_path / "t.jsonl", lines)])
    assert report.vector.cache_read == 2100 and report.vector.cache_write_5m == 1170
    assert report.vector.output == 91 and report.vector.cache_write_1h == 0
    assert report.provenance[REMAINDER] == 1 and report.api_calls == 2  # no call invented


def test_cost_state_equal_to_or_below_the_lines_changes_nothing(tmp_path: Path) -> None:
    same = [assistant("m1", 0, 1000, 50), cost_state(0, 1000, 50)]
    report = read_usage("claude", [write_lines(tmp_path / "a.jsonl", same)])
    assert report.vector == UsageVector(
        uncached_input=0,
        cache_read=0,
        cache_write_5m=1000,
        cache_write_1h=0,
        output=50,
        reasoning=None,
    )
    assert REMAINDER not in report.provenance
    stale = [assistant("m1", 0, 1000, 50), assistant("m2", 1000, 10, 20), cost_state(0, 1000, 50)]
    report = read_usage("claude", [write_lines(tmp_path / "b.jsonl", stale)])
    assert report.vector.output == 70 and report.provenance[BELOW_TRANSCRIPT] == 1


def test_rate_limit_events_become_observations_at_header_precision(tmp_path: Path) -> None:
    event = {
        "type": "rate_limit_event",
        "rate_limit_info": {
            "status": "allowed",
            "unifiedWindows": {
                "five_hour": {"utilization": 0.42, "resetsAt": 1796157303, "status": "allowed"},
                "seven_day": {"utilization": 0, "resetsAt": 1796744103, "status": "allowed"},
            },
        },
    }
    at = datetime(2026, 12, 1, tzinfo=UTC)
    observed = {o.window: o for o in rate_limit_event_observations(event, at)}
    assert (
        observed["five-hour"].used_percent == 42.0
        and observed["five-hour"].precision_percent == 1.0
    )
    assert observed["five-hour"].resets_at == datetime.fromtimestamp(1796157303, tz=UTC)
    assert (
        observed["seven-day"].used_percent == 0.0
        and observed["five-hour"].source_scale == "fraction"
    )
    # in a stream-json stdout, the time is the line before the event
    stdout = write_lines(tmp_path / "stdout.jsonl", [assistant("m1", 0, 5, 1), event])
    quota = read_usage("claude", [stdout]).quota_observations
    assert {o.observed_at for o in quota} == {datetime(2026, 12, 1, 10, tzinfo=UTC)}
    assert rate_limit_event_observations({"type": "rate_limit_event"}, at) == []


def test_final_answers_and_the_clis_own_usage_from_stdout() -> None:
    claude = "\n".join(
        [
            json.dumps({"type": "system", "subtype": "init"}),
            "not json",
            json.dumps(
                {
                    "type": "result",
                    "result": "Fixed it.",
                    "usage": {
                        "input_tokens": 3,
                        "cache_read_input_tokens": 10,
                        "cache_creation_input_tokens": 7,
                        "cache_creation": {
                            "ephemeral_5m_input_tokens": 7,
                            "ephemeral_1h_input_tokens": 0,
                        },
                        "output_tokens": 5,
                        "output_tokens_details": {"thinking_tokens": 0},
                    },
                }
            ),
        ]
    )
    assert claude_final_answer(claude) == "Fixed it."
    assert claude_result_usage(claude) == UsageVector(
        uncached_input=3, cache_read=10, cache_write_5m=7, cache_write_1h=0, output=5, reasoning=0
    )
    codex = "\n".join(
        json.dumps(o)
        for o in (
            {"type": "item.completed", "item": {"type": "agent_message", "text": "Looking."}},
            {"type": "item.completed", "item": {"type": "agent_message", "text": "Done: x."}},
            {
                "type": "turn.completed",
                "usage": {
                    "input_tokens": 100,
                    "cached_input_tokens": 60,
                    "cache_write_input_tokens": 0,
                    "output_tokens": 9,
                    "reasoning_output_tokens": 4,
                },
            },
        )
    )
    assert codex_final_answer(codex) == "Done: x."
    assert codex_turn_usage(codex) == UsageVector(
        uncached_input=40, cache_read=60, cache_write_generic=0, output=9, reasoning=4
    )
    assert claude_final_answer("") is None and codex_turn_usage("{}") is None
