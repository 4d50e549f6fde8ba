"""The intervention's tool calls that error or come back cut (issue 26 item 6), read from
the lines the real CLIs wrote and sent (measured against the emulator with
tests/fixtures/bad_servers/mcp_server.py posing as read_file: Claude Code 2.1.332's
stream-json and tool results, Codex 0.163.0's --json events and function_call_output).
The episode is recorded with the counts and kept; null is not zero.
"""

from __future__ import annotations

import json

from pairlab.adapters.clients.claude import claude_tool_calls_seen
from pairlab.adapters.clients.codex import codex_tool_calls_seen
from pairlab.core.emulator.conversation import (
    claude_conversation,
    codex_conversation,
    cut_results,
    is_cut_result,
)
from pairlab.core.intervention_health import (
    InterventionHealth,
    InterventionStatus,
    ToolCallsSeen,
    ToolOutcomes,
    count_intervention_health,
    count_oversized,
    tool_outcomes,
)
from pairlab.core.report.words import intervention_health_fact
from pairlab.core.schemas.episode import EpisodeRecord
from tests.unit.test_intervention_health import _record, row

SERVER = "token-optimizer"
# what each CLI sent the model in place of a 400,000-character result (shortened paths)
CLAUDE_REFUSED = (
    "Error: result (400,000 characters across 1,477 lines) exceeds maximum allowed tokens. "
    "Output has been saved to /tmp/home/.claude/projects/x/tool-results/read_file.txt.\n"
    "Format: Plain text\n"
)
CLAUDE_PERSISTED = (  # 51,000 characters: under 25,000 tokens, above 50,000 characters
    "<persisted-output>\nOutput too large (50KB). Full output saved to: /tmp/x.json\n\n"
    "Preview (first 2KB):\n[\n  {...\n</persisted-output>"
)
CODEX_TRUNCATED = "word0 word1 word19 word…7 tokens truncated…21 word22 word23"


def test_each_clis_mark_of_a_cut_result_and_nothing_else() -> None:
    for text in (
        CLAUDE_REFUSED,
        CLAUDE_PERSISTED,
        "Wall time: 0.01 s\nOutput:\n" + CODEX_TRUNCATED,
    ):
        assert is_cut_result(text)
    for text in (
        None,
        "read_file failed: the disk is on fire",
        "word0 word1 " * 5000,  # 30,000 characters both CLIs passed whole
        "the docs say: Error: result (3 characters across 1 lines) exceeds maximum allowed tokens",
        "<persisted-output> is a tag the server wrote",
    ):
        assert not is_cut_result(text)


def test_the_emulator_reads_the_cut_results_from_either_clis_request() -> None:
    claude = {
        "messages": [
            {"role": "user", "content": "fix it"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "a", "name": f"mcp__{SERVER}__read_file"},
                    {"type": "tool_use", "id": "b", "name": f"mcp__{SERVER}__read_file"},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": "x", "is_error": True},
                    {"type": "tool_result", "tool_use_id": "b", "content": CLAUDE_REFUSED},
                ],
            },
        ]
    }
    assert cut_results(claude_conversation(claude)) == [f"mcp__{SERVER}__read_file"]
    output = [
        {"type": "input_text", "text": "Wall time: 0.0095 seconds\nOutput:"},
        {"type": "input_text", "text": CODEX_TRUNCATED},
    ]
    codex = {
        "input": [
            {"type": "function_call", "call_id": "c", "name": "read_file", "arguments": "{}"}
            | {"namespace": "mcp__token_optimizer"},
            {"type": "function_call_output", "call_id": "c", "output": output},
        ]
    }
    assert cut_results(codex_conversation(codex)) == ["mcp__token_optimizer/read_file"]


def test_the_ledger_counts_the_servers_cut_results_on_its_last_model_request() -> None:
    claude, codex = f"mcp__{SERVER}__read_file", "mcp__token_optimizer/read_file"
    rows = [
        row(0, tool_results_cut=[]),
        row(2, tool_results_cut=[claude, "mcp__other__read_file", claude]),
        row(1, tool_results_cut=[claude]),
        row(-1, tool_results_cut=None, path="/v1/messages/count_tokens"),
    ]
    assert count_oversized(rows, SERVER) == 2
    assert count_oversized([row(0, tool_results_cut=[codex])], SERVER) == 1
    assert count_oversized([row(0, tool_results_cut=[])], SERVER) == 0
    # a ledger written before the field, or none at all: unknown, not 0
    assert count_oversized([row(0)], SERVER) is None
    assert count_oversized(None, SERVER) is None
    assert tool_outcomes(None, None, SERVER) == ToolOutcomes(None, None, None)
    seen = ToolCallsSeen(calls=3, errors=1)
    assert tool_outcomes(seen, rows, SERVER) == ToolOutcomes(3, 1, 2)


def _lines(*objects: object) -> str:
    return "\n".join(json.dumps(o) for o in objects) + "\nnot json\n"


def test_claudes_transcript_counts_the_servers_calls_and_is_error_results() -> None:
    def use(ident: str, name: str) -> dict[str, object]:
        block = {"type": "tool_use", "id": ident, "name": name, "input": {}}
        return {"type": "assistant", "message": {"content": [block]}}

    def result(ident: str, **kw: object) -> dict[str, object]:
        block = {"type": "tool_result", "tool_use_id": ident, "content": "x"} | kw
        return {"type": "user", "message": {"content": [block]}}

    stdout = _lines(
        {"type": "system", "subtype": "init"},
        use("1", "ToolSearch"),
        result("1", is_error=True),  # not the server's
        use("2", f"mcp__{SERVER}__read_file"),
        result("2", content="internal error: the disk is on fire", is_error=True),
        use("3", f"mcp__{SERVER}__read_file"),
        result("3", content=CLAUDE_REFUSED),  # refused, not is_error: the ledger counts it
        {"type": "result", "subtype": "success"},
    )
    assert claude_tool_calls_seen(stdout, SERVER) == ToolCallsSeen(calls=2, errors=1)
    assert claude_tool_calls_seen(_lines({"type": "system"}), SERVER) == ToolCallsSeen(0, 0)
    assert claude_tool_calls_seen("boom\n", SERVER) is None  # nothing to read: unknown


def test_codex_transcript_counts_failed_mcp_tool_calls() -> None:
    def item(status: str, server: str = SERVER, error: object = None) -> dict[str, object]:
        call = {"type": "mcp_tool_call", "server": server, "tool": "read_file"}
        return {"type": "item.completed", "item": call | {"status": status, "error": error}}

    stdout = _lines(
        {"type": "thread.started"},
        {"type": "item.started", "item": {"type": "mcp_tool_call", "server": SERVER}},
        item("failed"),  # isError: true (the model saw plain text)
        item("failed", error={"message": "Mcp error: -32603"}),
        item("completed"),
        item("failed", server="other"),
        {"type": "turn.completed", "usage": {}},
    )
    assert codex_tool_calls_seen(stdout, SERVER) == ToolCallsSeen(calls=3, errors=2)
    assert codex_tool_calls_seen("", SERVER) is None


def test_the_counts_are_recorded_kept_and_summed_in_the_report() -> None:
    loaded = InterventionHealth(InterventionStatus.LOADED, "ok", ToolOutcomes(2, 1, 1))
    record = _record("optimizer", loaded)
    assert not record.excluded  # the intervention's behaviour: kept, graded as it ended
    wire = json.loads(record.to_json_line())
    assert wire["interventionTools"] == {"calls": 2, "errors": 1, "oversized": 1}
    assert EpisodeRecord.model_validate_json(json.dumps(wire)) == record
    unread = InterventionHealth(InterventionStatus.LOADED, "ok", ToolOutcomes(3, 0, None))
    records = [
        _record("baseline", None),
        record,
        _record("optimizer", unread),
        _record("optimizer", InterventionHealth(InterventionStatus.NOT_LOADED, "x")),
    ]
    health = count_intervention_health(records)
    assert health is not None
    assert health["tools"] == {
        "calls": 5,
        "calls_read": 2,
        "errors": 1,
        "errors_read": 2,
        "oversized": 1,
        "oversized_read": 1,
    }
    assert intervention_health_fact(health).endswith(
        "; its tools: 5 calls, 1 errors, 1 oversized (kept, graded as they ended)"
    )
    # a record written before the field loads with it null
    del wire["interventionTools"]
    assert EpisodeRecord.model_validate_json(json.dumps(wire)).intervention_tools is None
