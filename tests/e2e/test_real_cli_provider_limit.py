"""A provider's usage limit mid-eval through the real Claude Code (issue 27 item 5): the
episode is ``provider-limit`` (recorded, excluded with its reason, counted in the report),
the run completes, and a resume with the same run id runs its pair again, once.

The helpers are the real-CLI eval's (tests/e2e/test_real_cli_eval.py): one local pair of
fix-median, the emulator's held ``usage-limit-429`` fault at the optimizer episode.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pairlab.core.emulator.run_settings import EmulatorSettings, parse_fault_rule
from tests.e2e import eval_checks as checks
from tests.e2e.test_real_cli_eval import check_episode, ledger_rows, run_eval

pytestmark = [pytest.mark.prefect, pytest.mark.e2e, pytest.mark.realcli, pytest.mark.timeout(900)]


def test_a_usage_limit_mid_eval_is_provider_limit_and_its_pair_runs_again_on_resume(
    prefect_harness: None, tmp_path: Path
) -> None:
    """The real Claude Code (subscription token) hits a usage limit that holds in the
    pair's optimizer episode: it gives up at once (no retry loop), the episode is recorded
    excluded as provider-limit with Claude's own words, the report counts it, the run
    completes; a resume with the same run id runs the pair again, once, to completion."""
    fault = parse_fault_rule("usage-limit-429@1:fix-median:optimizer:0")
    settings = {
        "task_filter": ["fix-median"],
        "arms": ["baseline", "optimizer"],
        "seed": 3,
        "emulator": EmulatorSettings(faults=[fault], wrong_probability=0.0),
        "run_id_override": "real-claude-provider-limit",
    }
    work, run_id = run_eval(tmp_path, "claude", "local", **dict(settings))
    run = checks.run_path(work, run_id)
    limited_id = f"{run_id}:fix-median:0:optimizer"
    records = checks.load_records(work, run_id)
    limited = records[limited_id]
    assert limited.excluded and limited.excluded_reason == "provider-limit"
    said = json.loads(
        (checks.episode_dirs(work, run_id)[limited_id] / "provider-limit.json").read_text()
    )
    assert (said["kind"], said["source"]) == ("usage-limit", "cli")
    assert "hit your 5-hour limit" in said["message"]  # Claude Code's own words
    rows = ledger_rows(checks.episode_dirs(work, run_id)[limited_id])
    refused = [r for r in rows if r.status == 429]
    assert refused and all(r.fault == "usage-limit-429" for r in refused)
    assert len(refused) == 1  # Claude Code does not retry a subscription's usage limit
    # the rest of the pair did not run after the limit (its baseline only if it came first)
    order = {e["episode_id"]: e["order"] for e in checks.schedule_entries(work, run_id)}
    baseline_id = f"{run_id}:fix-median:0:baseline"
    assert (baseline_id in records) is (order[baseline_id] < order[limited_id])
    report = (run / "report.md").read_text()
    assert "1 EPISODE ENDED BY A PROVIDER LIMIT" in report and "1 excluded" in report
    meta = json.loads((run / "report.json").read_text())["meta"]
    assert meta["provider_limited"] == 1 and meta["excluded_by_reason"] == {"provider-limit": 1}

    # resume: the pair is planned again whole, the held limit has lifted
    work, run_id = run_eval(tmp_path, "claude", "local", **dict(settings))
    records = checks.load_records(work, run_id)
    assert set(records) == {baseline_id, limited_id}
    for eid, record in records.items():
        assert not record.excluded and record.success and record.correct, eid
        check_episode("claude", record, checks.episode_dirs(work, run_id)[eid])
    lines = (run / "episodes.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["episodeId"] for line in lines) == sorted(records)  # once each
    aside = sorted(p.name for p in (run / "provider-limited").iterdir())
    assert f"{checks.episode_dirs(work, run_id)[limited_id].name}.1" in aside  # kept, not lost
    assert "PROVIDER LIMIT" not in (run / "report.md").read_text()
