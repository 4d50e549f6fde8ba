"""Golden tests of the usage readers on realistic provider-native fixtures, one per trap."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pairlab.adapters.usage import read_usage
from pairlab.adapters.usage.base import UsageReport
from pairlab.adapters.usage.claude import limit_notice_observation
from pairlab.core.errors import InvalidInputError

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "usage"


def dims(report: UsageReport) -> dict[str, int | None]:
    return report.vector.model_dump()


def read(client: str, *rel: str) -> UsageReport:
    return read_usage(client, [FIX / client / r for r in rel])


# --- Claude ---------------------------------------------------------------


def test_claude_streamed_blocks_keep_the_final_line_not_the_first() -> None:
    r = read("claude", "streamed_blocks")
    # first-line-wins would report 1 + 57 output tokens
    assert r.vector.output == 412 + 57
    assert r.api_calls == 2
    assert r.provenance["duplicate"] == 3
    assert r.vector.uncached_input == 9
    assert r.vector.cache_read == 11840 + 14050
    assert r.vector.cache_write_5m == 2210 + 388
    assert r.vector.cache_write_1h == 0
    assert r.vector.cache_write_generic is None
    assert r.cli_version == "2.0.14"
    assert r.session_id == "7c1f0a52-3d4e-4b8e-9a61-2f5d8c0e4b13"
    assert r.web_search_requests == 0


def test_claude_missing_request_id_still_dedupes_by_message_id_and_falls_back() -> None:
    r = read("claude", "missing_request_id")
    assert r.api_calls == 2  # 4 assistant lines, 2 responses
    assert r.vector.output == 96 + 31
    assert r.vector.cache_read == 9200 + 10700
    assert r.provenance["duplicate"] == 2
    assert r.by_model["claude-opus-4-20250514"].api_calls == 2


def test_claude_subagent_replay_counted_once_and_tool_result_copy_ignored() -> None:
    r = read("claude", "subagent_replay")
    assert r.api_calls == 4
    assert r.vector.output == 180 + 25 + 60 + 33
    assert r.vector.cache_write_5m == 1000 + 300 + 8000 + 500
    # the subagent's own calls only; the replayed parent message stays the parent's
    assert r.sidechain_vector.output == 60 + 33
    assert r.sidechain_vector.cache_write_5m == 8500
    assert r.provenance["tool-result-copy"] == 1
    assert r.provenance["duplicate"] == 1
    assert set(r.by_model) == {"claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"}
    assert r.by_model["claude-haiku-4-5-20251001"].vector.output == 33


def test_claude_subagent_replay_dedupe_is_independent_of_file_order(tmp_path: Path) -> None:
    src = FIX / "claude" / "subagent_replay"
    parent = next(src.rglob("7c1f*.jsonl"))
    sub = next(src.rglob("agent-*.jsonl"))
    (tmp_path / "a-agent.jsonl").write_bytes(sub.read_bytes())
    (tmp_path / "b-main.jsonl").write_bytes(parent.read_bytes())
    r = read_usage("claude", [tmp_path])
    assert r.vector.output == 298
    assert r.sidechain_vector.output == 93


def test_claude_inline_sidechain_lines_are_the_sidechain_share() -> None:
    r = read("claude", "inline_sidechain")
    assert r.api_calls == 3
    assert r.vector.output == 70 + 140 + 44
    assert r.sidechain_vector.output == 140
    assert r.sidechain_vector.cache_write_generic == 4100
    assert r.session_id == "e0d1c2b3-a495-4867-9788-a9b0c1d2e3f4"


def test_claude_synthetic_lines_are_not_calls_and_limit_notice_is_quota() -> None:
    r = read("claude", "synthetic")
    assert r.api_calls == 1
    assert r.provenance["synthetic-error"] == 2
    assert "<synthetic>" not in r.by_model
    assert r.vector.output == 22
    (obs,) = r.quota_observations
    # the legacy notice names no window: none is recorded (its reset, under 5 hours
    # away, would fit a seven-day window near its end as well)
    assert obs.window == "other:0"
    assert obs.used_percent == 100.0
    assert obs.resets_at == datetime(2025, 8, 20, 14, 0, tzinfo=UTC)
    # the truncated last line is counted, not fatal
    assert r.provenance["malformed-line"] == 1
    assert any(":5: malformed" in i for i in r.issues)


def test_claude_old_lines_without_split_go_to_generic_cache_writes() -> None:
    r = read("claude", "old_no_split")
    assert r.vector.cache_write_generic == 5400 + 120
    assert r.vector.cache_write_5m is None
    assert r.vector.cache_write_1h is None
    assert r.provider_reported_cost_usd == pytest.approx(0.0234 + 0.00361)
    assert r.cli_version == "0.2.125"


def test_claude_1h_and_5m_cache_writes_are_kept_apart() -> None:
    r = read("claude", "cache_1h_5m")
    assert r.vector.cache_write_1h == 45000
    assert r.vector.cache_write_5m == 1200 + 640
    assert r.vector.cache_write_generic is None
    assert r.web_search_requests == 2


def test_claude_print_result_object_is_a_summary_without_split() -> None:
    r = read("claude", "print_result")
    assert r.api_calls is None
    assert r.provenance["summary"] == 1
    assert r.vector.uncached_input == 22 + 1840
    assert r.vector.cache_write_generic == 6020
    assert r.vector.cache_write_5m is None
    assert r.vector.output == 845 + 96
    assert r.provider_reported_cost_usd == pytest.approx(0.08912475)
    assert r.session_id == "9f8e7d6c-4444-4555-8666-777788889999"
    assert r.web_search_requests == 1
    assert r.by_model["claude-haiku-4-5-20251001"].vector.uncached_input == 1840


def test_claude_transcript_supersedes_result_object_but_result_cost_is_kept() -> None:
    r = read("claude", "streamed_blocks", "print_result")
    assert r.vector.output == 469
    assert r.provenance["summary-superseded"] == 1
    assert r.provider_reported_cost_usd == pytest.approx(0.08912475)


# --- Codex ----------------------------------------------------------------


def test_codex_reemitted_snapshots_are_not_new_usage() -> None:
    r = read("codex", "reemitted")
    assert r.api_calls == 2
    assert r.provenance["duplicate"] == 3
    assert r.vector.uncached_input == 17600 - 11264 - 1024
    assert r.vector.cache_read == 11264
    assert r.vector.cache_write_generic == 1024
    assert r.vector.output == 655
    assert r.vector.reasoning == 384
    assert r.cli_version == "0.46.0"


def test_codex_zst_rollout_reads_like_plain() -> None:
    assert read("codex", "zst").vector == read("codex", "reemitted").vector


def test_codex_forked_session_replay_is_not_counted_twice() -> None:
    both = read("codex", "forked")
    assert both.provenance["replay"] == 2
    assert both.vector.output == 520 + 180
    assert both.vector.cache_read == 4864 + 6912
    assert both.session_id == "0199e400-0000-7000-8000-00000000aaaa"
    child = next((FIX / "codex" / "forked").rglob("*bbbb.jsonl"))
    alone = read_usage("codex", [child])
    assert alone.vector.output == 180
    assert alone.vector.uncached_input == 9000 - 6912
    assert alone.session_id == "0199e4ff-0000-7000-8000-00000000bbbb"


def test_codex_decreasing_total_is_a_reset_not_a_negative_delta() -> None:
    r = read("codex", "reset")
    assert r.provenance["reset"] == 1
    assert r.vector.output == 1300 + 260
    assert r.vector.cache_read == 38000 + 4096
    assert r.vector.uncached_input == (52000 - 38000) + (9000 - 4096)


def test_codex_missing_cache_writes_are_null_not_zero() -> None:
    r = read("codex", "per_model")
    assert r.vector.cache_write_generic is None
    assert r.vector.cache_write_5m is None and r.vector.cache_write_1h is None
    assert read("codex", "reemitted").vector.cache_write_generic == 1024


def test_codex_per_model_attribution_follows_turn_context() -> None:
    r = read("codex", "per_model")
    big, mini = r.by_model["gpt-5-codex"], r.by_model["gpt-5-codex-mini"]
    assert big.api_calls == 2 and mini.api_calls == 1
    assert big.vector.output == 650 and mini.vector.output == 150
    assert mini.vector.uncached_input == 4500 - 3000
    assert r.vector.output == 800


def test_codex_rate_limits_absolute_format() -> None:
    obs = read("codex", "reemitted").quota_observations
    five = [o for o in obs if o.window == "five-hour"]
    week = [o for o in obs if o.window == "seven-day"]
    assert [o.used_percent for o in five] == [12.0, 13.0]
    assert [o.used_percent for o in week] == [31.0]
    assert five[0].resets_at == datetime.fromtimestamp(1760446800, UTC)
    assert five[0].precision_percent == 1.0
    assert five[0].reset_id == five[1].reset_id


def test_codex_rate_limits_relative_format_299_10079_windows() -> None:
    obs = read("codex", "per_model").quota_observations
    five = [o for o in obs if o.window == "five-hour"]
    week = [o for o in obs if o.window == "seven-day"]
    assert [o.used_percent for o in five] == [40.0, 41.0]
    # resets_in_seconds relative to each line's time resolve to one reset instant
    assert {o.resets_at for o in five} == {datetime(2025, 9, 20, 10, 0, tzinfo=UTC)}
    assert week[0].resets_at == datetime(2025, 9, 24, 8, 0, tzinfo=UTC)


def test_codex_exec_json_usage_is_cumulative_not_summed() -> None:
    r = read("codex", "exec_json")
    assert r.vector.output == 890  # not 611 + 890
    assert r.vector.cache_read == 23552
    assert r.vector.uncached_input == 29954 - 23552
    assert r.vector.cache_write_generic is None
    assert r.session_id == "0199e700-0000-7000-8000-00000000eeee"


# --- Gemini ---------------------------------------------------------------


def test_gemini_json_roles_are_a_breakdown_not_added() -> None:
    r = read("gemini", "json_output")
    assert r.vector.uncached_input == (30676 - 24576) + 1290
    assert r.vector.cache_read == 24576
    assert r.vector.output == 412 + 254 + 38
    assert r.vector.reasoning == 254
    assert r.api_calls == 4
    assert r.by_model["gemini-2.5-pro"].api_calls == 3
    assert r.provenance["weak-zero"] == 2


def test_gemini_session_file_and_zero_provenance() -> None:
    r = read("gemini", "session")
    assert r.api_calls == 3
    assert r.vector.output == 64 + 130 + 210 + 124 + 138
    assert r.vector.reasoning == 254
    assert r.vector.uncached_input == (9812 + 10311 + 10553) - 3 * 8192
    assert r.vector.cache_write_generic is None
    assert r.provenance["weak-zero"] == 3
    # with the json summary in the same episode, the per-call session file wins
    both = read("gemini", "session", "json_output")
    assert both.vector == r.vector
    assert both.provenance["summary-superseded"] == 1


# --- Copilot --------------------------------------------------------------


def test_copilot_chat_spans_deduped_by_response_id_agent_span_not_added() -> None:
    r = read("copilot", "copilot-otel.jsonl")
    assert r.api_calls == 3
    assert r.provenance["duplicate"] == 1
    assert r.provenance["aggregate-span"] == 1
    assert r.vector.output == 240 + 512 + 310
    assert r.vector.cache_read == 12000 + 18100
    assert r.vector.uncached_input == (18200 - 12000 - 3100) + (21050 - 18100 - 2800) + 2400
    assert r.vector.cache_write_generic == 5900
    assert r.by_model["gpt-5-mini"].vector.reasoning == 192
    assert r.cli_version == "0.0.354"
    assert r.session_id == "b7e1c0d2-9f8a-4e3b-a6c5-d4e3f2a1b0c9"


# --- robustness -------------------------------------------------------------


def test_garbage_and_missing_files_are_counted_never_fatal(tmp_path: Path) -> None:
    bad = tmp_path / "x.jsonl"
    bad.write_bytes(b'\xff\xfe not json\n[1,2]\n{"type":"assistant"}\n')
    r = read_usage("claude", [bad, tmp_path / "missing.jsonl"])
    assert r.provenance["malformed-line"] == 2
    assert r.provenance["unreadable-file"] == 1
    assert r.provenance["unknown-usage"] == 1
    assert r.vector.is_empty() and r.api_calls is None


def test_truncated_zst_keeps_what_was_read(tmp_path: Path) -> None:
    src = next((FIX / "codex" / "zst").rglob("*.zst"))
    cut = tmp_path / "rollout-cut.jsonl.zst"
    cut.write_bytes(src.read_bytes()[:-40])
    r = read_usage("codex", [cut])
    assert r.provenance.get("unreadable-file", 0) + r.provenance.get("malformed-line", 0) >= 1


def test_null_stays_null_on_empty_episode(tmp_path: Path) -> None:
    r = read_usage("codex", [tmp_path])
    assert r.to_json()["vector"] == dict.fromkeys(
        [
            "uncached_input",
            "cache_read",
            "cache_write_5m",
            "cache_write_1h",
            "cache_write_generic",
            "output",
            "reasoning",
        ]
    )


def test_unknown_client_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError):
        read_usage("cursor", [FIX])


def test_report_round_trips_as_json() -> None:
    r = read("claude", "synthetic")
    again = UsageReport.model_validate_json(json.dumps(r.to_json()))
    assert again == r


def test_directory_scan_includes_hidden_gemini_dir(tmp_path: Path) -> None:
    shutil.copytree(FIX / "gemini" / "session", tmp_path / "home")
    assert read_usage("gemini", [tmp_path]).api_calls == 3


def test_codex_subagent_rollout_is_the_sidechain_share(tmp_path: Path) -> None:
    src = FIX / "codex" / "forked" / "sessions"
    parent = next(src.rglob("*aaaa.jsonl"))
    child_lines = next(src.rglob("*bbbb.jsonl")).read_text().splitlines()
    meta = json.loads(child_lines[0])
    del meta["payload"]["forked_from_id"]
    meta["payload"]["source"] = {
        "subagent": {
            "thread_spawn": {"parent_thread_id": meta["payload"]["id"][:-4] + "aaaa", "depth": 1}
        }
    }
    (tmp_path / parent.name).write_bytes(parent.read_bytes())
    (tmp_path / "rollout-child.jsonl").write_text(
        "\n".join([json.dumps(meta), *child_lines[1:]]) + "\n"
    )
    r = read_usage("codex", [tmp_path])
    assert r.provenance["replay"] == 2
    assert r.vector.output == 520 + 180
    assert r.sidechain_vector.output == 180
    assert r.sidechain_vector.cache_read == 6912
    assert r.session_id == "0199e400-0000-7000-8000-00000000aaaa"


@pytest.mark.parametrize(
    ("text", "window"),
    [
        ("Claude AI usage limit reached|1755698400", "other:0"),
        ("Claude AI usage limit reached|1756000000", "other:0"),  # days away: still none named
        ("5-hour limit reached ∙ resets 2pm", "five-hour"),
        ("You've hit your session limit · resets 2pm", "five-hour"),
        ("You've hit your weekly limit · resets Aug 25", "seven-day"),
    ],
)
def test_a_limit_notice_is_recorded_for_the_window_it_names_or_none(text: str, window: str) -> None:
    observed = datetime(2025, 8, 20, 11, 5, tzinfo=UTC)
    obs = limit_notice_observation(text, observed)
    assert obs is not None and obs.window == window and obs.used_percent == 100.0
