"""``pairlab eval --profile claude|codex --backend local|docker``: the core suite through the
real CLI, the provider emulator started by the run (issue 14, item 7).

For every episode of each eval, checked against the emulator's ground truth (its ledger)
and the CLI's own files, never against pairlab's own numbers:

* the episode record's 7-dimension vector (pairlab's reader on the files the CLI wrote)
  equals the ledger's ground truth exactly, and so does the CLI's own account on stdout
  (Claude's result usage, Codex's ``turn.completed``);
* the quota snapshots (the claude-oauth-usage / codex-usage-endpoint probes on the
  emulator's usage endpoint) reproduce the quota model around the episode at whole-
  percent precision, and concurrent use is the emulator's ground truth;
* the graders pass the scripted solution and fail the wrong variant;
* treated arms' MCP ledger rows -- written by the intervention for tool calls the real
  CLI made (their ids are in its transcript) -- make ``pairlab audit-savings`` report
  verified savings; the baseline has none.

And a 429 injected mid-eval: the CLI retries, its records show it, the usage is neither
lost nor counted twice.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from flows.evidence_eval import evidence_eval
from flows.params import EvidenceEvalParams
from pairlab.adapters.run.provider import cli_own_usage
from pairlab.core.emulator.quota_model import WindowSnapshot
from pairlab.core.emulator.quota_surfaces import whole_percent
from pairlab.core.emulator.request_ledger import RequestRow, ground_truth, read_ledger
from pairlab.core.emulator.run_settings import EmulatorSettings, pair_seed, parse_fault_rule
from pairlab.core.emulator.scripted_model import ScriptChoices
from pairlab.core.schemas.catalog import load_suite
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.schemas.usage import UsageVector
from tests.e2e import eval_checks as checks
from tests.integration.realcli_harness import require_cli
from tests.support import CATALOG_DIR, pairlab_argv, run_pairlab

pytestmark = [pytest.mark.prefect, pytest.mark.e2e, pytest.mark.realcli, pytest.mark.timeout(1800)]

TASKS = [t.id for t in load_suite(CATALOG_DIR, "core").tasks]
ARMS = ["baseline", "optimizer", "retrieval", "full"]
WRONG_P = 0.3
NAVIGATE = "navigate-legacy-parse"
PROVIDER = {"claude": "claude", "codex": "codex"}


# On Docker, two of the core suite's tasks: what differs there is the container around the
# CLI (image, volumes, the run network to the emulator), the same for every task; each task's
# fixture and grader in a container is the sim demo's (tests/e2e/test_docker_first_use.py),
# and every task with each real CLI runs locally here and in the README main job.
DOCKER_TASKS = [NAVIGATE, "fix-median"]


def pick_seed(tasks: list[str] = TASKS) -> int:
    """A run seed whose pair scripts include both variants, and a correct navigate pair that
    reads the large README (a preview in treated arms: something for the ledger)."""
    for seed in range(500):
        drawn = {t: ScriptChoices.draw(t, pair_seed(seed, t, 0), WRONG_P) for t in tasks}
        nav = drawn[NAVIGATE]
        if {c.variant for c in drawn.values()} == {"correct", "wrong"} and (
            nav.read_readme and nav.variant == "correct"
        ):
            return seed
    raise AssertionError("no seed found")


def run_eval(tmp_path: Path, profile: str, backend: str, **overrides: Any) -> tuple[Path, str]:
    require_cli(profile)  # type: ignore[arg-type]
    if backend == "docker":
        from tests.integration.backend_fixtures import docker_client_or_skip

        docker_client_or_skip().close()
    run_id = overrides.pop("run_id_override", None) or f"real-{profile}-{backend}"
    work = tmp_path / "work"
    params = EvidenceEvalParams(
        profile=profile,
        backend=backend,  # type: ignore[arg-type]
        run_id=run_id,
        store=str(tmp_path / "store"),
        work_dir=str(work),
        include_transcript=True,
        **{"repetitions": 1, "min_pairs": 2, **overrides},
    )
    state = evidence_eval(params, return_state=True)
    assert state.is_completed(), state
    return work, run_id


def vector_of(record: EpisodeRecord) -> UsageVector:
    data = record.model_dump(by_alias=True)
    return UsageVector(**{key: data[field] for field, key in checks.TRUTH_FIELDS.items()})


def ledger_rows(episode_dir: Path) -> list[RequestRow]:
    return read_ledger(episode_dir / "emulator-ledger.jsonl")[1]


def surfaced(window: WindowSnapshot) -> tuple[float, datetime | None]:
    reset = datetime.fromtimestamp(window.resets_at, tz=UTC) if window.resets_at else None
    return float(whole_percent(window)), reset


def check_quota(record: EpisodeRecord, rows: list[RequestRow], provider: str) -> None:
    """Before/after snapshots = the quota model right before the first request and after
    the last (concurrency 1: nothing else charged the account in between)."""
    first = rows[0].quota_before
    last = next(r.quota_after for r in reversed(rows) if r.quota_after is not None)
    assert first is not None and last is not None
    for observations, snapshot in ((record.quota_before, first), (record.quota_after, last)):
        seen = {o.window: o for o in observations or [] if o.provider == provider}
        assert set(seen) == {"five-hour", "seven-day"}, observations
        for name, window in (("five-hour", snapshot.five_hour), ("seven-day", snapshot.seven_day)):
            assert (seen[name].used_percent, seen[name].resets_at) == surfaced(window)
            assert seen[name].precision_percent == 1.0
    assert record.unrelated_concurrent_quota_use is False
    assert record.concurrent_use_basis == "emulator-charge-log"
    for consumption in record.quota_consumption or []:
        window = first.five_hour if consumption.window == "five-hour" else first.seven_day
        after = last.five_hour if consumption.window == "five-hour" else last.seven_day
        expected = float(whole_percent(after) - whole_percent(window))
        assert consumption.consumption_percent == expected, consumption


def check_episode(profile: str, record: EpisodeRecord, episode_dir: Path) -> str:
    """Usage, quota and grading of one episode; returns the scripted variant."""
    rows = ledger_rows(episode_dir)
    truth = ground_truth(rows)
    assert vector_of(record) == truth, (record.episode_id, vector_of(record), truth)
    assert record.transcript is not None and record.transcript.stdout is not None
    assert cli_own_usage(profile, record.transcript.stdout) == truth, record.episode_id
    assert json.loads((episode_dir / "emulator.json").read_text())["agrees"] is True
    check_quota(record, rows, PROVIDER[profile])
    variants = {r.turn.variant for r in rows if r.turn}
    assert len(variants) == 1, variants
    (variant,) = variants
    assert record.correct is (variant == "correct"), (record.episode_id, record.grader_checks)
    return variant


def transcript_text(episode_dir: Path, profile: str) -> str:
    pattern = ".claude/projects/**/*.jsonl" if profile == "claude" else ".codex/sessions/**/*.jsonl"
    return "\n".join(p.read_text() for p in (episode_dir / "collected" / "home").glob(pattern))


def check_savings(profile: str, work: Path, run_id: str, records: dict[str, EpisodeRecord]) -> None:
    dirs = checks.episode_dirs(work, run_id)
    with_rows = {eid for eid, r in records.items() if r.ledger}
    assert with_rows and all(not eid.endswith(":baseline") for eid in with_rows)
    assert f"{run_id}:{NAVIGATE}:0:optimizer" in with_rows
    for eid in with_rows:  # each row was caused by a tool call of the real CLI
        rows = [
            json.loads(line)
            for line in (dirs[eid] / "collected" / "state" / "mcp-ledger.jsonl")
            .read_text()
            .splitlines()
        ]
        text = transcript_text(dirs[eid], profile)
        assert rows and all(row["rpc_id"] in text for row in rows), eid
    audit = run_pairlab("audit-savings", str(checks.run_path(work, run_id)), "--json")
    assert audit.returncode == 0, audit.stderr
    report = json.loads(audit.stdout)
    assert report["qualified_rows"] >= len(with_rows) and report["excluded_count"] == 0
    assert report["verified_net_tokens"] > 0  # the README's preview saved more than it cost
    assert set(report["by_arm"]) <= {"optimizer", "retrieval", "full"}


def check_intervention_status(work: Path, run_id: str, records: dict[str, EpisodeRecord]) -> None:
    """Every treated episode says whether the intervention was there (issue 26 item 6: a
    Codex-on-Docker retrieval episode once missed the tools silently): a fault is recorded
    as its exclusion reason, the baseline says nothing, report.json counts them -- and the
    reference server (``required`` for Codex) is loaded in every treated episode."""
    treated = [r for r in records.values() if r.arm != "baseline"]
    for record in records.values():
        if record.arm == "baseline":
            assert record.intervention_status is None, record.episode_id
        elif record.intervention_status != "loaded":
            assert record.intervention_status is not None, record.episode_id
            assert record.excluded_reason == record.intervention_status, record.episode_id
    report = json.loads((checks.run_path(work, run_id) / "report.json").read_text())
    health = report["meta"]["intervention_health"]
    assert health["treated"] == health["judged"] == len(treated)
    assert health["loaded"] == sum(r.intervention_status == "loaded" for r in treated)
    assert health["not_there"] == {}, [
        (r.episode_id, r.intervention_status, r.intervention_detail)
        for r in treated
        if r.intervention_status != "loaded"
    ]


@pytest.mark.parametrize(
    ("profile", "backend"),
    [
        # claude on local: the README main job below (the same 28 episodes through `pairlab
        # demo`, each checked against the ledger there); a second run of it here cost CI minutes
        ("codex", "local"),
        pytest.param("claude", "docker", marks=pytest.mark.docker),
        pytest.param("codex", "docker", marks=pytest.mark.docker),
    ],
)
def test_the_core_suite_through_the_real_cli_agrees_with_the_emulator(
    prefect_harness: None, tmp_path: Path, profile: str, backend: str
) -> None:
    tasks = DOCKER_TASKS if backend == "docker" else TASKS
    subset = {"task_filter": tasks} if backend == "docker" else {}
    work, run_id = run_eval(
        tmp_path,
        profile,
        backend,
        seed=pick_seed(tasks),
        emulator=EmulatorSettings(wrong_probability=WRONG_P),
        **subset,
    )
    records = checks.load_records(work, run_id)
    assert len(records) == len(tasks) * len(ARMS)
    assert {r.task_id for r in records.values()} == set(tasks)
    dirs = checks.episode_dirs(work, run_id)
    variants = {eid: check_episode(profile, rec, dirs[eid]) for eid, rec in records.items()}
    assert set(variants.values()) == {"correct", "wrong"}
    assert {r.client_version for r in records.values()} == {
        {"claude": "2.1.332", "codex": "0.163.0"}[profile]
    }
    assert {r.backend for r in records.values()} == {backend}
    check_intervention_status(work, run_id, records)
    check_savings(profile, work, run_id, records)


@pytest.mark.parametrize("profile", ["claude", "codex"])
def test_a_429_mid_eval_is_retried_and_nothing_is_lost_or_counted_twice(
    tmp_path: Path, profile: str
) -> None:
    fault = parse_fault_rule("rate-limit-429@1:fix-median:optimizer")
    work, run_id = run_eval(
        tmp_path,
        profile,
        "local",
        task_filter=["fix-median"],
        arms=["baseline", "optimizer"],
        seed=3,
        emulator=EmulatorSettings(faults=[fault], wrong_probability=0.0),
    )
    records = checks.load_records(work, run_id)
    dirs = checks.episode_dirs(work, run_id)
    faulted = f"{run_id}:fix-median:0:optimizer"
    for eid, record in records.items():
        check_episode(profile, record, dirs[eid])
    rows = ledger_rows(dirs[faulted])
    refused = [r for r in rows if r.status == 429]
    assert [r.request_index for r in refused] == [1] and not refused[0].billed
    assert rows[2].turn == refused[0].turn  # the same turn asked again
    billed = [r for r in rows if r.billed]
    assert len(billed) == len(rows) - 1
    if profile == "claude":  # the retry, in the CLI's own records
        assert '"subtype":"api_error"' in transcript_text(dirs[faulted], profile).replace(" ", "")
    else:
        assert "Reconnecting" in (records[faulted].transcript.stdout or "")  # type: ignore[union-attr]
    assert records[faulted].success and records[faulted].correct
    # the refused request billed nothing; everything else exactly once
    assert vector_of(records[faulted]) == ground_truth(billed)


def test_the_readme_main_job_runs_the_real_claude_by_default(tmp_path: Path) -> None:
    """``pairlab demo`` (one repetition here): the real Claude Code against the emulator the
    run starts; every episode's usage agrees with the ground truth."""
    require_cli("claude")
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(tmp_path / "prefect")

    def demo(*args: str) -> subprocess.CompletedProcess[str]:
        argv = pairlab_argv("demo", *args, "--json")
        return subprocess.run(
            argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, check=False
        )

    done = demo("--repetitions", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["episodes"] == len(TASKS) * len(ARMS)
    run = tmp_path / ".pairlab" / "work" / "runs" / summary["run_id"]
    agree = [json.loads(p.read_text())["agrees"] for p in run.glob("episodes/*/emulator.json")]
    assert len(agree) == summary["episodes"] and all(agree)
    # and read here, independently of the run's own check: each record's vector is the
    # ground truth of its emulator ledger, and the graders agree with the scripted variant
    work, run_id = run.parent.parent, summary["run_id"]
    dirs = checks.episode_dirs(work, run_id)
    assert len(dirs) == summary["episodes"]
    loaded = checks.load_records(work, run_id)
    for eid, record in loaded.items():
        rows = ledger_rows(dirs[eid])
        assert vector_of(record) == ground_truth(rows), eid
        (variant,) = {r.turn.variant for r in rows if r.turn}
        assert record.correct is (variant == "correct"), (eid, record.grader_checks)
    check_intervention_status(work, run_id, loaded)
    records = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert {(r["client"], r["clientVersion"], r["model"]) for r in records} == {
        ("claude", "2.1.332", "claude-sonnet-5")
    }
    bad = demo("--profile", "nope")
    assert bad.returncode == 2 and "unknown runner profile 'nope'" in bad.stdout + bad.stderr
    assert "Traceback" not in bad.stdout + bad.stderr
