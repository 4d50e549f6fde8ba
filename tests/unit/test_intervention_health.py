"""The rule of whether a treated episode's intervention was there (core/intervention_health)
and the CLIs' own accounts of a server, read from the lines the real CLIs wrote
(Claude Code 2.1.332's MCP log and stream-json init; Codex 0.163.0's stderr, measured
with tests/fixtures/bad_servers/mcp_server.py, `sh -c 'exit 1'` and `sleep`).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pairlab.adapters.clients.claude import (
    classify_claude_mcp_log,
    claude_init_status,
    claude_server_report,
)
from pairlab.adapters.clients.codex import codex_server_report
from pairlab.core.emulator.request_ledger import RequestRow
from pairlab.core.intervention_health import (
    InterventionHealth,
    InterventionStatus,
    ServerReport,
    judge_intervention,
    server_offered,
)
from pairlab.core.records import (
    EpisodeIdentity,
    EpisodeOutcome,
    Grading,
    QuotaInterval,
    RecordedUsage,
    build_episode_record,
    exclusion_for,
)
from pairlab.core.schemas.episode import EpisodeRecord

S = InterventionStatus
NO_TOOLS_READ = {
    "calls": None,
    "calls_read": 0,
    "errors": None,
    "errors_read": 0,
    "oversized": None,
    "oversized_read": 0,
}
SERVER = "mcp-server-git"


def row(index: int, tools: list[str] = (), sources: str | None = None, **kw: object) -> RequestRow:
    fields: dict[str, object] = {
        "token": "ep",
        "request_index": index,
        "request_id": f"req-{index}",
        "at": 0.0,
        "duration_ms": 1.0,
        "provider": "anthropic",
        "method": "POST",
        "path": "/v1/messages",
        "status": 200,
        "tools_offered": list(tools),
        "tool_search_sources": sources,
    }
    return RequestRow.model_validate(fields | kw)


GIT = ["Bash", "Read", f"mcp__{SERVER}__git_status", f"mcp__{SERVER}__git_log"]
PLAIN = ["Bash", "Read", "Edit", "Write"]


def judge(
    requests: list[RequestRow] | None, report: ServerReport | None = None, arm: str = "optimizer"
) -> InterventionHealth | None:
    return judge_intervention(arm=arm, server_name=SERVER, requests=requests, report=report)


def test_a_request_offers_the_server_by_its_tools_or_codex_tool_search_sources() -> None:
    assert server_offered(row(0, GIT), SERVER)
    assert not server_offered(row(0, PLAIN), SERVER)
    assert not server_offered(row(0, ["mcp__other__git_status"]), SERVER)
    # Codex: deferred behind tool_search, whose description names the server; a namespace
    # tool after a search spells '-' as '_'
    sources = "Tools of these sources:\n- mcp-server-git: Git tools\n- other: x"
    assert server_offered(row(0, ["exec_command"], sources), SERVER)
    assert not server_offered(row(0, ["exec_command"], "- other: x"), SERVER)
    assert server_offered(row(0, ["mcp__mcp_server_git__git_log"]), SERVER)


def test_the_ledger_decides_when_the_cli_said_nothing() -> None:
    loaded = judge([row(0, GIT), row(1, GIT)])
    assert loaded is not None and loaded.status == S.LOADED and not loaded.is_fault
    never = judge([row(0, PLAIN), row(1, PLAIN)])
    assert never is not None and never.status == S.NOT_LOADED
    assert never.detail == "none of the 2 model requests offered a tool of 'mcp-server-git'"
    dropped = judge([row(0, GIT), row(1, GIT), row(2, PLAIN)])
    assert dropped is not None and dropped.status == S.EXITED
    assert "from request 0 and missing from request 2" in dropped.detail
    late = judge([row(0, PLAIN), row(1, GIT)])  # joined after the first request: loaded
    assert late is not None and late.status == S.LOADED
    # rows out of order are judged in request order; an unknown route is no model request
    unordered = [row(1, GIT), row(0, GIT), row(-1, path="/api/hello", status=404)]
    assert judge(unordered) == InterventionHealth(
        S.LOADED, "2 of 2 model requests offered 'mcp-server-git'"
    )


def test_the_clis_own_account_comes_first_and_null_stays_null() -> None:
    offered = [row(0, GIT)]
    timeout = judge(offered, ServerReport("timeout", detail="claude: CONNECT_TIMEOUT"))
    assert timeout == InterventionHealth(S.TIMEOUT, "claude: CONNECT_TIMEOUT")
    failed = judge([], ServerReport("start-failed"))  # Codex: no request at all
    assert failed is not None and failed.status == S.START_FAILED
    exited = judge(offered, ServerReport("connected", exited=True))
    assert exited is not None and exited.status == S.EXITED
    # connected (a server listing no tool) but never offered: not loaded, with its words
    empty = judge([row(0, PLAIN)], ServerReport("connected", detail="said"))
    assert empty is not None and empty.status == S.NOT_LOADED and empty.detail.endswith("(said)")
    # unknown: the baseline, no ledger and no report, a ledger without model requests
    assert judge([row(0, PLAIN)], arm="baseline") is None
    assert judge(None) is None
    assert judge([]) is None
    assert judge(None, ServerReport("connected")) == InterventionHealth(
        S.LOADED, "the CLI connected to the server (no model request)"
    )


def _log(*messages: tuple[str, str]) -> list[str]:
    return [text for _, text in messages]


CONNECTED = ("debug", "Successfully connected (transport: stdio) in 50ms")
SIGINT = ("debug", "Sending SIGINT to MCP server process")
CLOSED = ("debug", "STDIO connection closed after 0s (cleanly)")


def test_claudes_mcp_log_tells_timeout_start_failure_and_exit_apart() -> None:
    start = ("debug", "Starting connection with timeout of 2000ms")
    timeout = (
        'Connection failed (CONNECT_TIMEOUT): MCP server "slow" connection timed out after 2000ms'
    )
    assert classify_claude_mcp_log(_log(start, ("error", timeout))) == ServerReport(
        "timeout", detail=f"claude: {timeout}"
    )
    closed = "Connection failed (CONNECTION_CLOSED): Connection closed"
    report = classify_claude_mcp_log(
        _log(start, ("error", "Server stderr: boom\n"), ("error", closed))
    )
    assert report == ServerReport("start-failed", detail=f"claude: {closed}")
    # Claude Code ends the episode: SIGINT first, then the close -- a clean end
    clean = classify_claude_mcp_log(_log(start, CONNECTED, SIGINT, CLOSED))
    assert clean == ServerReport("connected")
    # the server went away on its own: the close without Claude's signal
    gone = classify_claude_mcp_log(_log(start, CONNECTED, CLOSED))
    assert gone is not None and gone.connection == "connected" and gone.exited
    assert classify_claude_mcp_log([]) is None


def test_claudes_report_reads_its_log_under_home_else_its_init_status(tmp_path: Path) -> None:
    init = {
        "type": "system",
        "subtype": "init",
        "mcp_servers": [{"name": SERVER, "status": "failed"}],
    }
    stdout = json.dumps(init) + "\n" + json.dumps({"type": "result"}) + "\n"
    assert claude_init_status(stdout, SERVER) == "failed"
    assert claude_init_status(stdout, "other") is None
    assert claude_server_report(stdout, "", tmp_path, SERVER) == ServerReport(
        "start-failed", detail=f"claude: init lists '{SERVER}' as failed"
    )
    logs = tmp_path / ".cache/claude-cli-nodejs/-ws/" / f"mcp-logs-{SERVER}"
    logs.mkdir(parents=True)
    lines = [{"debug": CONNECTED[1]}, {"debug": CLOSED[1]}, {"debug": "not json"}]
    (logs / "2026-12-04T23-27-53-642Z.jsonl").write_text(
        "\n".join(json.dumps(line) for line in lines) + "\nnot json\n"
    )
    connected = stdout.replace('"failed"', '"connected"')
    report = claude_server_report(connected, "", tmp_path, SERVER)
    assert report is not None and report.connection == "connected" and report.exited
    assert claude_server_report("", "", tmp_path / "none", SERVER) is None


def test_codex_says_why_a_required_server_failed_on_stderr() -> None:
    prefix = "ERROR codex_core::session: Failed to create session: required MCP servers failed to initialize: "
    failed = f"{SERVER}: handshaking with MCP server failed: connection closed: initialize response"
    timed = f"{SERVER}: timed out handshaking with MCP server after 1.99999968s"
    assert codex_server_report("", prefix + failed + "\n", Path("."), SERVER) == ServerReport(
        "start-failed", detail=f"codex: {failed}"
    )
    report = codex_server_report("", prefix + timed + "\n", Path("."), SERVER)
    assert report is not None and report.connection == "timeout"
    assert codex_server_report("", prefix + "other: timed out\n", Path("."), SERVER) is None
    assert codex_server_report("", "", Path("."), SERVER) is None


def _record(arm: str, health: InterventionHealth | None) -> EpisodeRecord:
    exclusion = exclusion_for(started=True, checks=[], rules=[], intervention=health)
    return build_episode_record(
        EpisodeIdentity("r", f"r:t:0:{arm}", "r:t:0", "t", arm, 0, 0),
        EpisodeOutcome("local", datetime(2026, 1, 1, tzinfo=UTC), None, 0, False, 1.0, "p", "", ""),
        RecordedUsage("claude", "2", "m", None, None, None, None),
        QuotaInterval(),
        Grading(checks=[], exclusion=exclusion, intervention=health),
    )


@pytest.mark.parametrize("status", [s for s in S if s != S.LOADED])
def test_a_fault_is_recorded_and_excludes_the_episode(status: InterventionStatus) -> None:
    record = _record("optimizer", InterventionHealth(status, "why"))
    assert record.excluded and record.excluded_reason == status.value
    assert (record.intervention_status, record.intervention_detail) == (status.value, "why")
    back = EpisodeRecord.model_validate_json(record.to_json_line())
    assert back.intervention_status == status.value
    assert json.loads(record.to_json_line())["interventionStatus"] == status.value


def test_loaded_and_unknown_are_not_excluded_and_a_failed_start_comes_first() -> None:
    loaded = _record("optimizer", InterventionHealth(S.LOADED, "1 of 1"))
    assert not loaded.excluded and loaded.intervention_status == "loaded"
    baseline = _record("baseline", None)
    assert not baseline.excluded and baseline.intervention_status is None
    fault = InterventionHealth(S.NOT_LOADED, "x")
    rules = ["infrastructure-failure-before-start", "grader-infrastructure-error"]
    never_started = exclusion_for(started=False, checks=[], rules=rules, intervention=fault)
    assert never_started == "infrastructure-failure-before-start"
    assert exclusion_for(started=True, checks=[], rules=[], intervention=fault) == fault.status


def test_the_report_counts_them_and_unjudged_runs_stay_null() -> None:
    from pairlab.core.intervention_health import count_intervention_health
    from pairlab.core.report.markdown import render_report_markdown
    from pairlab.core.report.words import intervention_health_fact

    records = [
        _record("baseline", None),
        _record("optimizer", InterventionHealth(S.LOADED, "ok")),
        _record("optimizer", InterventionHealth(S.NOT_LOADED, "x")),
        _record("full", InterventionHealth(S.TIMEOUT, "x")),
        _record("full", InterventionHealth(S.NOT_LOADED, "x")),
        _record("full", None),  # not judged (no ledger, nothing said)
    ]
    health = count_intervention_health(records)
    assert health == {
        "treated": 5,
        "judged": 4,
        "loaded": 1,
        "not_there": {"intervention-not-loaded": 2, "intervention-timeout": 1},
        "tools": NO_TOOLS_READ,  # no tool outcome recorded: unknown, not 0
    }
    fact = intervention_health_fact(health)
    assert fact == (
        " · intervention loaded in 1 of 4 judged treated episodes (5 treated); not there: "
        "2 intervention-not-loaded, 1 intervention-timeout (excluded from effects); its tools: "
        "— calls, — errors, — oversized (kept, graded as they ended)"
    )
    assert fact in render_report_markdown({"intervention_health": health}, {})
    # nothing judged (the simulator's fixed treatment; records written before): null
    assert count_intervention_health([_record("baseline", None), _record("full", None)]) is None
    assert intervention_health_fact(None) == ""


def test_a_not_loaded_episode_is_left_out_of_effects_and_counted_in_report_json() -> None:
    from pairlab.core.report.run import analyse_run, render_run_report
    from tests.report_support import PLAN, settings, stored_records

    records = stored_records(6)
    run_settings = settings()

    def report(rows: list[EpisodeRecord]) -> dict[str, object]:
        analysis = analyse_run(rows, run_settings, PLAN)
        return dict(render_run_report(run_settings, rows, [], PLAN, analysis).payload)

    treated = next(i for i, r in enumerate(records) if r.arm != "baseline")
    bad = records[treated].model_copy(
        update={
            "excluded": True,
            "excluded_reason": "intervention-not-loaded",
            "intervention_status": "intervention-not-loaded",
            "intervention_detail": "none of the 6 model requests offered a tool of 'x'",
        }
    )
    before, after = report(records), report([*records[:treated], bad, *records[treated + 1 :]])
    meta = after["meta"]
    assert isinstance(meta, dict)
    assert meta["excluded"] == 1
    assert meta["excluded_by_reason"] == {"intervention-not-loaded": 1}
    assert meta["intervention_health"] == {
        "treated": sum(1 for r in records if r.arm != "baseline"),
        "judged": 1,
        "loaded": 0,
        "not_there": {"intervention-not-loaded": 1},
        "tools": NO_TOOLS_READ,
    }

    def excluded(payload: dict[str, object]) -> int:
        analysis = payload["analysis"]
        assert isinstance(analysis, dict)
        return sum(c["excluded"] for c in analysis["cohorts"])

    assert (excluded(before), excluded(after)) == (0, 1)  # left out of its cohort's effects
    assert before["meta"]["intervention_health"] is None  # type: ignore[index]


def test_a_loaded_episode_carries_its_definition_cost_per_request() -> None:
    """From the ledger's per-request ``mcp_definition_tokens`` (Codex spells '-' as '_'):
    the run's server only, 0 where a request carried none of it; null is not zero -- a
    model request the emulator did not measure (an older ledger) makes the list unknown."""
    rows = [
        row(0, GIT, mcp_definition_tokens={SERVER: 137, "other": 9}),
        row(1, GIT, mcp_definition_tokens={"mcp_server_git": 140}),
        row(2, GIT, mcp_definition_tokens={"other": 9}),
        row(-1, path="/v1/messages/count_tokens"),  # not a model request
    ]
    health = judge(rows)
    assert health is not None and health.status == S.LOADED
    assert health.definition_tokens == (137, 140, 0)
    health = judge([rows[0], row(1, GIT)])
    assert health is not None and health.definition_tokens is None
    assert judge(rows, arm="baseline") is None


def test_the_answer_per_intervention_reads_the_headline_and_says_when_it_is_insufficient() -> None:
    from pairlab.core.report.intervention_answer import (
        answer_lines,
        answer_word,
        build_intervention_answer,
    )
    from pairlab.core.report.words import reason_text

    assert answer_word({"win": 2, "noEvidence": 1}, 3) == "saved"
    assert answer_word({"regression": 1, "insufficient": 2}, 3) == "cost more"
    assert answer_word({"win": 1, "regression": 1}, 2) == "mixed"
    assert answer_word({"insufficient": 2}, 2) == "insufficient"
    assert answer_word({"insufficient": 1, "noEvidence": 1}, 2) == "no evidence"
    stamp = {"id": SERVER, "version": "2026.10.19", "manifest_sha256": "ab" * 32}
    cell = {
        "win": 0,
        "regression": 0,
        "noEvidence": 0,
        "insufficient": 2,
        "reasons": {"skewed": 2},
    }
    headline = {
        "exploratory": False,
        "gate": 5,
        "groups": [
            {
                "client": "claude",
                "clientVersion": "2.1.332",
                "intervention": f"{SERVER}@2026.10.19:{'ab' * 6}",
                "contrasts": [
                    {
                        "treatment": "optimizer",
                        "control": "baseline",
                        "cohorts": 2,
                        "tokens": cell,
                        "cost": cell,
                        "subscription": {"noEvidence": 2},
                    }
                ],
            },
            {"intervention": "reference@1.0.0:000000000000", "contrasts": [{"cohorts": 1}]},
        ],
    }
    by_arm = {
        "optimizer": {
            "episodes": 2,
            "requests": 9,
            "definitionTokensPerRequest": {"median": 137, "min": 137, "max": 137},
            "toolCalls": 0,
        }
    }
    meta = {
        "intervention": stamp,
        "all_below_gate": True,
        "intervention_measures": {"byArm": by_arm},
    }
    answer = build_intervention_answer(meta, headline)
    assert answer is not None
    (contrast,) = answer["contrasts"]  # its own group only
    assert (contrast["tokens"], contrast["cost"], contrast["subscription"]) == (
        "insufficient",
        "insufficient",
        "no evidence",
    )
    assert contrast["definitionTokensPerRequest"] == 137 and answer["usage"] == "floor"
    text = "\n".join(answer_lines(answer))
    assert f"Did **{SERVER} 2026.10.19** (manifest {'ab' * 6}) save?" in text
    assert "137 cl100k tokens per model request (median of 9 requests in 2 treated" in text
    assert "Insufficient by design" in text and "measures the floor" in text
    # why there is no answer, from the headline's reasons (cohorts per reason)
    assert f"tokens **insufficient** ({reason_text('skewed')} 2)" in text
    assert build_intervention_answer({"intervention": None}, headline) is None
    # a usage recipe ran: its calls and the errors they answered
    by_arm["optimizer"] |= {"toolCalls": 4, "episodesCallingTools": 2, "toolErrors": 4}
    answer = build_intervention_answer(meta, headline)
    assert answer is not None and answer["usage"] == "recipe"
    text = "\n".join(answer_lines(answer))
    assert (
        "A usage recipe ran (optimizer): the scripted model called its tools 4 times in 2" in text
    )
    assert "4 answered an error" in text and "measures the floor" not in text
    # not measured: the cost stays unknown, never 0
    unmeasured = build_intervention_answer({"intervention": stamp}, headline)
    assert (
        unmeasured is not None and unmeasured["contrasts"][0]["definitionTokensPerRequest"] is None
    )
    assert unmeasured["usage"] is None
