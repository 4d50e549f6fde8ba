"""Claims 2 and 3 of the causal protocol through the real CLIs (issue 18).

``pairlab eval`` on the ``claims-useful`` and ``claims-useless`` suites (arms baseline,
optimizer, retrieval) with the real Claude Code and Codex against the provider emulator.
The planted catalog finding is delivered in some pairs and held out (seeded) in others.
Checked against files pairlab did not write itself -- the CLI's transcript, the
intervention's evidence log, the emulator's ledger:

* every MCP-involving episode joins exactly (transcript tool-call id = the MCP call's id
  = the ledger rows' / evidence events' id) for >= 95 %; any fallback carries its reason;
* the record's finding fields equal the intervention's evidence log, and a delivered
  finding's text reached the model (it is in the CLI's transcript), a held-out one never;
* useful suite: the delivered-vs-held-out effect on turns has an interval below zero,
  and the emulator's own ledger shows the fewer model requests; useless suite: the
  interval includes zero (the scripted model did the same work either way).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pairlab.core.emulator.run_settings import EmulatorSettings
from pairlab.core.findings.retrieval import holdout_draw
from pairlab.core.schemas.episode import EpisodeRecord, make_pair_id
from tests.e2e import eval_checks as checks
from tests.e2e.test_real_cli_eval import ledger_rows, run_eval, transcript_text

pytestmark = [pytest.mark.prefect, pytest.mark.e2e, pytest.mark.realcli, pytest.mark.timeout(1800)]

REPS = 6
ARMS = ["baseline", "optimizer", "retrieval"]
FINDING = {  # the finding id the catalog's planted finding gets (content-addressed)
    "claims-useful": ("recall-legacy-caller", "f-6d404aabe46f3554"),
    "claims-useless": ("recall-legacy-caller-useless", "f-9e729f25b4e074e9"),
}


def pick_seed(profile: str, suite: str) -> int:
    """A run seed whose seeded holdouts split the pairs 3/3 (run id fixed per test)."""
    task, finding = FINDING[suite]
    run_id = f"claims-{profile}-{suite}"
    for seed in range(200):
        held = sum(
            holdout_draw(str(seed), make_pair_id(run_id, task, rep), finding) < 0.5
            for rep in range(REPS)
        )
        if held == REPS // 2:
            return seed
    raise AssertionError("no balanced seed")


def evidence_events(episode_dir: Path) -> list[dict[str, Any]]:
    path = episode_dir / "collected" / "state" / "evidence-log.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def check_joins(profile: str, records: dict[str, EpisodeRecord], dirs: dict[str, Path]) -> float:
    involved = [r for r in records.values() if (r.mcp_tool_calls or 0) > 0]
    assert involved and all(r.arm != "baseline" for r in involved)
    exact = [r for r in involved if r.join_method == "exact"]
    for r in involved:
        if r.join_method == "fallback":
            assert r.join_fallback_reason, r.episode_id  # every fallback labelled
    for r in exact:  # independently: every logged call id is in the CLI's own transcript
        text = transcript_text(dirs[r.episode_id], profile)
        ids = {e["toolCallId"] for e in evidence_events(dirs[r.episode_id])}
        assert ids and None not in ids and all(i in text for i in ids), r.episode_id
    for r in records.values():
        if r.arm == "baseline":
            assert r.join_method == "none" and r.mcp_tool_calls == 0
    return len(exact) / len(involved)


def check_findings(
    profile: str, suite: str, records: dict[str, EpisodeRecord], dirs: dict[str, Path]
) -> None:
    _, finding = FINDING[suite]
    treated = [r for r in records.values() if r.arm == "retrieval"]
    assert len(treated) == REPS
    for r in treated:
        events = evidence_events(dirs[r.episode_id])
        delivered = [
            f["findingId"] for e in events if e["event"] == "delivery" for f in e["findings"]
        ]
        held = [f["findingId"] for e in events if e["event"] == "holdout" for f in e["findings"]]
        assert (r.finding_ids, r.shadow_finding_ids) == (delivered, held), r.episode_id
        assert {*delivered, *held} == {finding}
        text = transcript_text(dirs[r.episode_id], profile)
        assert (f"[{finding}]" in text) is bool(delivered)  # what the model saw
        if delivered:
            assert r.injection_id and r.injection_id in text and (r.delivered_tokens or 0) > 0
            assert r.shadow_tokens == 0
        else:
            assert r.injection_id is None and r.delivered_tokens == 0 and (r.shadow_tokens or 0) > 0
        assert r.tool_call_id and r.tool_call_id in text
    for r in records.values():
        if r.arm != "retrieval":
            assert r.finding_ids == [] and r.shadow_finding_ids == [] and r.delivered_tokens is None


def effect_of(work: Path, run_id: str, suite: str, metric: str) -> dict[str, Any]:
    report = json.loads((checks.run_path(work, run_id) / "report.json").read_text())
    (cohort,) = report["retrievalEvidence"]["cohorts"]
    (row,) = cohort["findings"]
    assert row["findingId"] == FINDING[suite][1]
    effect: dict[str, Any] = row["metrics"][metric]
    return effect


def ledger_turns(
    dirs: dict[str, Path], records: dict[str, EpisodeRecord], delivered: bool
) -> list[int]:
    """Model requests per retrieval episode minus its optimizer pair's, from the emulator."""
    out = []
    for r in records.values():
        if r.arm != "retrieval" or bool(r.finding_ids) is not delivered:
            continue
        control = r.episode_id.removesuffix(":retrieval") + ":optimizer"
        out.append(len(ledger_rows(dirs[r.episode_id])) - len(ledger_rows(dirs[control])))
    return out


@pytest.mark.parametrize("profile", ["claude", "codex"])
def test_useful_findings_cut_turns_useless_ones_do_not_and_joins_are_exact(
    prefect_harness: None, tmp_path: Path, profile: str
) -> None:
    coverage = {}
    for suite in ("claims-useful", "claims-useless"):
        run_id = f"claims-{profile}-{suite}"
        work, _ = run_eval(
            tmp_path / suite,
            profile,
            "local",
            suite=suite,
            arms=ARMS,
            repetitions=REPS,
            seed=pick_seed(profile, suite),
            run_id_override=run_id,
            emulator=EmulatorSettings(wrong_probability=0.0),
        )
        records = checks.load_records(work, run_id)
        dirs = checks.episode_dirs(work, run_id)
        assert len(records) == REPS * len(ARMS)
        coverage[suite] = check_joins(profile, records, dirs)
        check_findings(profile, suite, records, dirs)
        turns = effect_of(work, run_id, suite, "apiCalls")
        assert (turns["nDelivered"], turns["nHeldOut"]) == (REPS // 2, REPS // 2)
        with_finding, without = (
            ledger_turns(dirs, records, True),
            ledger_turns(dirs, records, False),
        )
        if suite == "claims-useful":
            assert turns["excludesZero"] is True and turns["high"] < 0, turns
            assert max(with_finding) < min(without)  # the emulator's own request counts
        else:
            assert turns["excludesZero"] is False and turns["low"] <= 0 <= turns["high"], turns
            assert sorted(with_finding) == sorted(without)
        assert effect_of(work, run_id, suite, "correct")["estimate"] == 0.0
        tokens = effect_of(work, run_id, suite, "totalTokens")
        involved = sum((r.mcp_tool_calls or 0) > 0 for r in records.values())
        print(
            f"{profile} {suite}: turns {turns}; tokens {tokens}; exact join coverage "
            f"{coverage[suite]:.3f} of {involved} MCP-involving episodes"
        )
    assert min(coverage.values()) >= 0.95, coverage
