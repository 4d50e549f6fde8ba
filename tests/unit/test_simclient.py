"""simclient as a subprocess: records land where the real CLIs put them, the truth
file matches what a CLIENTS.md-conformant reader computes, runs are deterministic,
arms follow the configured effects, the quota file updates and resets, fault modes
behave, and the startup line reports planted HOME configuration.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.unit.simclient_harness import SimLayout, run_sim, sim_env

DIMS = (
    "uncached_input",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
    "cache_write_generic",
    "output",
    "reasoning",
)


@pytest.fixture
def layout(tmp_path: Path) -> SimLayout:
    lay = SimLayout(tmp_path / "ep").make()
    lay.solution.mkdir()
    (lay.solution / "pkg").mkdir()
    (lay.solution / "pkg" / "fixed.py").write_text("VALUE = 42\n", encoding="utf-8")
    (lay.solution / ".final_answer").write_text("the median is 4.5\n", encoding="utf-8")
    (lay.workspace / "pkg").mkdir()
    (lay.workspace / "pkg" / "fixed.py").write_text("VALUE = 0\n", encoding="utf-8")
    return lay


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


# --- reference readers, written from CLIENTS.md (independent of simclient's code) ---


def claude_vector(files: list[Path]) -> tuple[dict[str, int | None], int]:
    best: dict[str, dict[str, Any]] = {}
    for path in files:
        for line in _jsonl(path):
            if line.get("type") != "assistant":
                continue
            msg = line["message"]
            key = msg.get("id") or line.get("requestId")
            usage = msg["usage"]
            kept = best.get(key)
            if kept is None or usage["output_tokens"] >= kept["output_tokens"]:
                best[key] = usage
    vec: dict[str, int | None] = dict.fromkeys(DIMS)
    vec.update(
        uncached_input=sum(u["input_tokens"] for u in best.values()),
        cache_read=sum(u["cache_read_input_tokens"] for u in best.values()),
        cache_write_5m=sum(u["cache_creation"]["ephemeral_5m_input_tokens"] for u in best.values()),
        cache_write_1h=sum(u["cache_creation"]["ephemeral_1h_input_tokens"] for u in best.values()),
        output=sum(u["output_tokens"] for u in best.values()),
    )
    return vec, len(best)


def codex_vector(path: Path) -> tuple[dict[str, int | None], int]:
    last: dict[str, int] | None = None
    changes = 0
    for line in _jsonl(path):
        payload = line["payload"]
        if line["type"] == "event_msg" and payload["type"] == "token_count" and payload["info"]:
            total = payload["info"]["total_token_usage"]
            if total != last:
                changes += 1
                last = total
    assert last is not None
    vec: dict[str, int | None] = dict.fromkeys(DIMS)
    vec.update(
        uncached_input=last["input_tokens"] - last["cached_input_tokens"],
        cache_read=last["cached_input_tokens"],
        output=last["output_tokens"],
        reasoning=last["reasoning_output_tokens"],
    )
    return vec, changes


def gemini_vector(tokens: dict[str, int]) -> dict[str, int | None]:
    vec: dict[str, int | None] = dict.fromkeys(DIMS)
    vec.update(
        uncached_input=tokens["prompt"] - tokens["cached"] + tokens["tool"],
        cache_read=tokens["cached"],
        output=tokens["candidates"] + tokens["thoughts"],
        reasoning=tokens["thoughts"],
    )
    return vec


# --- formats ---


def test_claude_records_match_truth_and_carry_the_traps(layout: SimLayout) -> None:
    proc = run_sim(layout, "claude", arm="full", episode_id="run1:median-stats:0:full")
    assert proc.returncode == 0, proc.stderr
    truth = layout.truth()
    slug = re.sub(r"[^a-zA-Z0-9]", "-", str(layout.workspace.resolve()))
    project = layout.home / ".claude" / "projects" / slug
    session = truth["session_id"]
    main_file = project / f"{session}.jsonl"
    subagents = list((project / session / "subagents").glob("agent-*.jsonl"))
    assert main_file.is_file() and len(subagents) == 1
    vec, calls = claude_vector([main_file, *subagents])
    assert truth["vector"] == vec
    assert truth["api_calls"] == calls
    assert truth["vector"]["cache_write_generic"] is None and truth["vector"]["reasoning"] is None
    assert truth["model"] == "claude-sonnet-5"

    lines = _jsonl(main_file)
    assistant = [ln for ln in lines if ln["type"] == "assistant"]
    assert {ln["version"] for ln in assistant} == {"2.1.3"}
    by_id: dict[str, list[int]] = {}
    for ln in assistant:
        by_id.setdefault(ln["message"]["id"], []).append(ln["message"]["usage"]["output_tokens"])
    # streamed: several lines per response, placeholders below the real count on the last line
    assert any(len(v) > 1 and v[0] < v[-1] for v in by_id.values())
    first_line_wins = sum(v[0] for v in by_id.values())
    assert first_line_wins < vec["output"]  # the first-line-wins trap would undercount
    copies = [
        ln for ln in lines if ln["type"] == "user" and "usage" in (ln.get("toolUseResult") or {})
    ]
    assert copies, "a Task result carries a usage copy"
    sub_lines = _jsonl(subagents[0])
    assert all(ln["isSidechain"] for ln in sub_lines if ln["type"] != "file-history-snapshot")
    assert {ln["sessionId"] for ln in sub_lines} == {session}
    replayed = [
        ln for ln in sub_lines if ln["type"] == "assistant" and ln["message"]["id"] in by_id
    ]
    assert len(replayed) == 1
    parent_request_ids = {ln["requestId"] for ln in assistant}
    assert replayed[0]["requestId"] not in parent_request_ids


def test_claude_model_flag_and_no_subagent_for_baseline(layout: SimLayout) -> None:
    proc = run_sim(layout, "claude", args=("--model", "claude-opus-4-1-20250805"))
    assert proc.returncode == 0, proc.stderr
    truth = layout.truth()
    assert truth["model"] == "claude-opus-4-1-20250805"
    files = list((layout.home / ".claude" / "projects").rglob("*.jsonl"))
    assert len(files) == 1
    models = {ln["message"]["model"] for ln in _jsonl(files[0]) if ln["type"] == "assistant"}
    assert models == {"claude-opus-4-1-20250805"}


def test_codex_rollout_cumulative_snapshots_and_rate_limits(layout: SimLayout) -> None:
    proc = run_sim(layout, "codex", arm="optimizer", episode_id="run1:median-stats:0:optimizer")
    assert proc.returncode == 0, proc.stderr
    truth = layout.truth()
    rollouts = list((layout.home / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    assert len(rollouts) == 1
    rel = rollouts[0].relative_to(layout.home / ".codex" / "sessions")
    assert rel.parts[:3] == ("2025", "05", "20")
    assert rel.name.startswith("rollout-2025-05-20T10-00-00-") and truth["session_id"] in rel.name
    vec, changes = codex_vector(rollouts[0])
    assert truth["vector"] == vec and truth["api_calls"] == changes
    assert vec["cache_write_5m"] is None and vec["cache_write_generic"] is None

    lines = _jsonl(rollouts[0])
    meta = lines[0]["payload"]
    assert lines[0]["type"] == "session_meta" and meta["source"] == "exec" and meta["cli_version"]
    assert meta["model_provider"] == "openai" and meta["id"] == truth["session_id"]
    ctx = [ln["payload"] for ln in lines if ln["type"] == "turn_context"]
    assert ctx and ctx[0]["model"] == truth["model"] and ctx[0]["effort"]
    counts = [
        ln["payload"]
        for ln in lines
        if ln["type"] == "event_msg" and ln["payload"]["type"] == "token_count"
    ]
    totals = [c["info"]["total_token_usage"] for c in counts if c["info"]]
    assert len(totals) > changes, "at least one snapshot is re-emitted unchanged"
    naive = sum(t["output_tokens"] for t in totals)
    assert naive > vec["output"]
    for t in totals:
        assert t["total_tokens"] == t["input_tokens"] + t["output_tokens"]
    limits = counts[-1]["rate_limits"]
    after = truth["quota"]["after"]["windows"]
    assert (
        limits["primary"]["window_minutes"] == 300
        and limits["secondary"]["window_minutes"] == 10080
    )
    assert limits["primary"]["used_percent"] == after["five-hour"]["used_percent"]
    assert isinstance(limits["primary"]["resets_at"], int)


def test_gemini_stdout_json_and_session_file(layout: SimLayout) -> None:
    proc = run_sim(layout, "gemini", arm="retrieval", episode_id="run1:median-stats:0:retrieval")
    assert proc.returncode == 0, proc.stderr
    truth = layout.truth()
    out = json.loads(proc.stdout)
    assert out["session_id"] == truth["session_id"]
    assert out["response"].splitlines()[-1] == f"FINAL ANSWER: {truth['final_answer']}"
    ((model, stats),) = out["stats"]["models"].items()
    assert model == truth["model"] and stats["api"]["totalRequests"] == truth["api_calls"]
    assert gemini_vector(stats["tokens"]) == truth["vector"]
    project = hashlib.sha256(str(layout.workspace.resolve()).encode()).hexdigest()
    sessions = list((layout.home / ".gemini" / "tmp" / project / "chats").glob("session-*.json"))
    assert len(sessions) == 1
    messages = json.loads(sessions[0].read_text(encoding="utf-8"))["messages"]
    summed = {
        k: sum(m["tokens"][k] for m in messages if m["type"] == "gemini")
        for k in ("input", "output", "cached", "thoughts", "tool")
    }
    from_session = gemini_vector(
        {
            "prompt": summed["input"],
            "candidates": summed["output"],
            "cached": summed["cached"],
            "thoughts": summed["thoughts"],
            "tool": summed["tool"],
        }
    )
    assert from_session == truth["vector"]


# --- determinism and arms ---


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize("fmt", ["claude", "codex", "gemini"])
def test_same_seed_same_bytes(tmp_path: Path, fmt: str) -> None:
    lay = SimLayout(tmp_path / "ep").make()
    first = run_sim(lay, fmt, arm="full", episode_id="run1:t:3:full")
    snap1 = _snapshot(lay.root)
    for sub in ("home", "state", "graph", "account"):
        for p in sorted((lay.root / sub).rglob("*"), reverse=True):
            p.unlink() if p.is_file() else p.rmdir()
    second = run_sim(lay, fmt, arm="full", episode_id="run1:t:3:full")
    assert first.stdout == second.stdout
    snap2 = _snapshot(lay.root)
    snap1.pop("account/quota.lock", None)
    snap2.pop("account/quota.lock", None)
    assert snap1 == snap2
    other = run_sim(lay, fmt, arm="full", episode_id="run1:t:4:full")
    assert other.returncode == 0
    assert lay.truth()["vector"] != json.loads(snap1["state/simclient-truth.json"])["vector"]


def test_arm_effects_follow_the_config(tmp_path: Path) -> None:
    config = tmp_path / "sim.json"
    config.write_text(
        json.dumps(
            {
                "noise": {"episode_sigma": 0, "dimension_sigma": 0},
                "arms": {"optimizer": {"effects": {"uncached_input": 0.5}}},
            }
        ),
        encoding="utf-8",
    )
    vectors = {}
    for arm in ("baseline", "optimizer"):
        lay = SimLayout(tmp_path / arm).make()
        proc = run_sim(
            lay,
            "codex",
            arm=arm,
            episode_id=f"run1:median-stats:0:{arm}",
            PAIRLAB_SIM_CONFIG=str(config),
        )
        assert proc.returncode == 0, proc.stderr
        vectors[arm] = lay.truth()["vector"]
    assert (
        abs(vectors["optimizer"]["uncached_input"] - vectors["baseline"]["uncached_input"] / 2) <= 1
    )
    assert vectors["optimizer"]["cache_read"] == vectors["baseline"]["cache_read"]

    # inline effects win over the file; a bare arm mapping is accepted
    lay = SimLayout(tmp_path / "inline").make()
    inline = json.dumps({"optimizer": {"effects": {"uncached_input": 0.25}}})
    run_sim(
        lay,
        "codex",
        arm="optimizer",
        episode_id="run1:median-stats:0:optimizer",
        PAIRLAB_SIM_CONFIG=str(config),
        PAIRLAB_SIM_EFFECTS=inline,
    )
    assert (
        abs(lay.truth()["vector"]["uncached_input"] - vectors["baseline"]["uncached_input"] / 4)
        <= 1
    )


def test_default_effects_hold_on_average() -> None:
    """In-process: the mean ratio treated/baseline approaches the configured effect."""
    from pairlab_simclient.config import DEFAULT_CONFIG, load_config
    from pairlab_simclient.episode_env import read_episode_env
    from pairlab_simclient.usage_draw import draw_episode

    config = load_config({})
    prompt = "Fix the median function."
    sums: dict[str, float] = {}
    solved: dict[str, int] = {}
    n = 400
    for arm in ("baseline", "full"):
        for rep in range(n):
            environ = {
                "PAIRLAB_SEED": "9",
                "PAIRLAB_TASK_ID": "t",
                "PAIRLAB_EPISODE_ID": f"r:t:{rep}:{arm}",
                "TOKEN_OPTIMIZER_EXPERIMENT_ARM": arm,
                "HOME": "/nonexistent",
            }
            draw = draw_episode(read_episode_env(environ, prompt, "/tmp"), prompt, config)
            sums[arm] = sums.get(arm, 0) + draw.total("uncached_input")
            solved[arm] = solved.get(arm, 0) + draw.solved
    expected = DEFAULT_CONFIG["arms"]["full"]["effects"]["uncached_input"]
    assert abs(sums["full"] / sums["baseline"] - expected) < 0.06
    assert all(abs(solved[arm] / n - 0.9) < 0.06 for arm in solved)


def test_solving_overlays_the_solution(layout: SimLayout) -> None:
    proc = run_sim(layout, "claude", PAIRLAB_SIM_EFFECTS='{"baseline": {"solve_p": 1.0}}')
    assert proc.returncode == 0
    assert (layout.workspace / "pkg" / "fixed.py").read_text() == "VALUE = 42\n"
    assert not (layout.workspace / ".final_answer").exists()
    assert proc.stdout.splitlines()[-1] == "FINAL ANSWER: the median is 4.5"
    truth = layout.truth()
    assert truth["solved"] is True and truth["files_written"] == ["pkg/fixed.py"]


def test_unsolved_leaves_the_workspace(layout: SimLayout) -> None:
    proc = run_sim(layout, "codex", PAIRLAB_SIM_EFFECTS='{"baseline": {"solve_p": 0.0}}')
    assert proc.returncode == 0
    assert (layout.workspace / "pkg" / "fixed.py").read_text() == "VALUE = 0\n"
    assert "the median is 4.5" not in proc.stdout
    assert layout.truth()["solved"] is False


def test_unknown_arm_and_bad_config_are_usage_errors(layout: SimLayout) -> None:
    assert run_sim(layout, "claude", arm="nonsense").returncode == 2
    bad = run_sim(layout, "claude", PAIRLAB_SIM_EFFECTS='{"baseline": {"effects": {"tokens": 2}}}')
    assert bad.returncode == 2 and "unknown dimension" in bad.stderr


# --- ledger and graph ---


def test_ledger_rows_only_for_treated_arms(tmp_path: Path) -> None:
    base = SimLayout(tmp_path / "b").make()
    run_sim(base, "claude", arm="baseline")
    assert not (base.state / "mcp-ledger.jsonl").exists()
    assert base.truth()["ledger"] is None

    duplicates = {}
    for rep, retry_p in ((0, None), (1, None), (2, 1.0)):
        lay = SimLayout(tmp_path / f"f{rep}").make()
        extra = (
            {"PAIRLAB_SIM_EFFECTS": json.dumps({"ledger": {"retry_p": retry_p}})} if retry_p else {}
        )
        proc = run_sim(
            lay, "claude", arm="full", episode_id=f"run1:median-stats:{rep}:full", **extra
        )
        assert proc.returncode == 0, proc.stderr
        rows = _jsonl(lay.state / "mcp-ledger.jsonl")
        assert {r["schema_version"] for r in rows} == {2}
        reductions = [r for r in rows if r["kind"] == "reduction" and r["provenance"] == "measured"]
        expansions = [r for r in rows if r["kind"] == "expansion"]
        assert reductions and expansions
        assert {e["expansion_ref"] for e in expansions} <= {r["expansion_ref"] for r in reductions}
        for e in expansions:
            assert e["before_bytes"] is None and e["saved_tokens"] is None
        for r in reductions:
            assert r["delta_bytes"] == r["before_bytes"] - r["returned_bytes"]
            assert r["saved_tokens"] == r["before_tokens"] - r["returned_tokens"]
            assert r["expansion_ref"] == f"sha256:{r['before_sha256']}"
        ids = [(r["process_id"], r["session_id"], r["rpc_id"]) for r in rows]
        duplicates[rep] = len(ids) - len(set(ids))
        summary = lay.truth()["ledger"]
        assert summary["rows_written"] == len(rows) and summary["unique_requests"] == len(set(ids))
    assert duplicates[2] == 1

    opt = SimLayout(tmp_path / "o").make()
    assert (
        run_sim(
            opt, "codex", arm="optimizer", episode_id="run1:median-stats:0:optimizer"
        ).returncode
        == 0
    )
    kinds = {(r["kind"], r["provenance"]) for r in _jsonl(opt.state / "mcp-ledger.jsonl")}
    assert kinds == {("reduction", "measured")}


def test_graph_findings_read_by_retrieval_arms_and_marker_written(tmp_path: Path) -> None:
    seen = {}
    for arm in ("baseline", "retrieval"):
        lay = SimLayout(tmp_path / arm).make()
        (lay.graph / "findings.jsonl").write_text(
            json.dumps({"id": "f-median-even", "claim": "median of even-length lists averages"})
            + "\n",
            encoding="utf-8",
        )
        assert (
            run_sim(lay, "codex", arm=arm, episode_id=f"run1:median-stats:0:{arm}").returncode == 0
        )
        seen[arm] = lay.truth()["graph"]
        marker = json.loads((lay.graph / "simclient-marker.json").read_text(encoding="utf-8"))
        assert marker["arm"] == arm and seen[arm]["previous_marker"] is None
    assert seen["baseline"]["findings"] == []
    assert seen["retrieval"]["findings"] == ["f-median-even"]


# --- quota ---


def test_quota_updates_and_resets(tmp_path: Path) -> None:
    lay = SimLayout(tmp_path / "q").make()
    truths = []
    for i, now in enumerate(
        ["2025-05-20T10:00:00.000Z", "2025-05-20T11:00:00.000Z", "2025-05-20T16:30:00.000Z"]
    ):
        proc = run_sim(
            lay,
            "claude",
            arm="baseline",
            episode_id=f"run1:median-stats:{i}:baseline",
            PAIRLAB_SIM_NOW=now,
            PAIRLAB_SIM_EFFECTS='{"quota": {"five_hour_budget_tokens": 100000}}',
        )
        assert proc.returncode == 0, proc.stderr
        truths.append(lay.truth())
    state = json.loads((lay.account / "quota.json").read_text(encoding="utf-8"))
    five, seven = state["windows"]["five-hour"], state["windows"]["seven-day"]
    spent = [
        sum(v for v in t["vector"].values() if v is not None) - (t["vector"]["reasoning"] or 0)
        for t in truths
    ]
    # the first two episodes share one five-hour window; the third lands after its reset
    assert truths[1]["quota"]["after"]["windows"]["five-hour"]["used_tokens"] == spent[0] + spent[1]
    assert truths[1]["quota"]["after"]["windows"]["five-hour"]["reset_id"] == "five-hour-1"
    assert five["reset_id"] == "five-hour-2" and five["used_tokens"] == spent[2]
    assert five["resets_at"] == "2025-05-20T20:00:00Z"
    assert five["used_percent"] == spent[2] * 100 // 100000 and isinstance(
        five["used_percent"], int
    )
    assert seven["reset_id"] == "seven-day-1" and seven["used_tokens"] == sum(spent)
    assert seven["window_minutes"] == 10080 and seven["resets_at"] == "2025-05-27T10:00:00Z"

    shown = subprocess.run(
        [sys.executable, "-m", "pairlab_simclient", "quota"],
        env=sim_env(lay, "baseline", "x", PAIRLAB_SIM_NOW="2025-05-20T21:00:00.000Z"),
        capture_output=True,
        text=True,
        check=True,
    )
    rolled = json.loads(shown.stdout)["windows"]["five-hour"]
    assert rolled["used_tokens"] == 0 and rolled["reset_id"] == "five-hour-3"


def test_quota_skipped_without_account_dir(layout: SimLayout) -> None:
    proc = run_sim(layout, "codex", PAIRLAB_SIM_ACCOUNT_DIR="")
    assert proc.returncode == 0
    assert "PAIRLAB_SIM_ACCOUNT_DIR is not set" in proc.stderr
    assert layout.truth()["quota"] is None
    counts = [
        ln["payload"]
        for f in (layout.home / ".codex").rglob("*.jsonl")
        for ln in _jsonl(f)
        if ln["payload"].get("type") == "token_count"
    ]
    assert counts and all(c["rate_limits"] is None for c in counts)


# --- startup line ---


def test_startup_line_lists_planted_configuration(layout: SimLayout) -> None:
    claude = layout.home / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}
                    ]
                },
                "mcpServers": {"tokopt": {"command": "tokopt-mcp"}},
            }
        )
    )
    (claude / "CLAUDE.md").write_text("be terse\n")
    (layout.home / ".claude.json").write_text(
        json.dumps({"mcpServers": {"memory": {"command": "m"}}})
    )
    (layout.home / ".codex").mkdir()
    (layout.home / ".codex" / "config.toml").write_text(
        '[mcp_servers.graph]\ncommand = "graph-mcp"\n'
    )
    (layout.home / ".codex" / "AGENTS.md").write_text("rules\n")
    proc = run_sim(layout, "claude", arm="full", episode_id="run1:median-stats:0:full")
    assert proc.returncode == 0
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("simclient: found "))
    assert line == (
        'simclient: found hooks=["PreToolUse"] mcp_servers=["graph","memory","tokopt"] '
        'rules=[".claude/CLAUDE.md",".codex/AGENTS.md"]'
    )
    assert layout.truth()["seen"] == {
        "hooks": ["PreToolUse"],
        "mcp_servers": ["graph", "memory", "tokopt"],
        "rules": [".claude/CLAUDE.md", ".codex/AGENTS.md"],
    }


def test_startup_line_empty_for_a_clean_home(layout: SimLayout) -> None:
    proc = run_sim(layout, "gemini")
    assert "simclient: found hooks=[] mcp_servers=[] rules=[]" in proc.stderr.splitlines()


# --- faults ---


def _start(layout: SimLayout, fault: str, **kw: Any) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "pairlab_simclient", "exec", "--format", "claude", "go"]
    return subprocess.Popen(
        argv,
        env=sim_env(layout, "baseline", "e", PAIRLAB_SIM_FAULT=fault),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        **kw,
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_fault_crash_exits_3(layout: SimLayout) -> None:
    proc = run_sim(layout, "claude", PAIRLAB_SIM_FAULT="crash")
    assert proc.returncode == 3
    assert not (layout.state / "simclient-truth.json").exists()


def test_fault_hang_runs_until_killed(layout: SimLayout) -> None:
    proc = _start(layout, "hang")
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1.5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL


def test_fault_hang_ignore_term_needs_a_group_kill(layout: SimLayout) -> None:
    proc = _start(layout, "hang-ignore-term")
    try:
        pid_file = layout.state / "simclient-child.pid"
        deadline = time.monotonic() + 20
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(pid_file.read_text())
        time.sleep(0.3)  # let the child install its SIGTERM handler
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)  # the parent dies on SIGTERM ...
        time.sleep(0.3)
        assert _alive(child), "... but its child ignores SIGTERM (and still holds the pipes)"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_fault_oom_dies_by_sigkill(layout: SimLayout) -> None:
    import resource

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))

    proc = _start(layout, "oom", preexec_fn=limit_memory)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert "MemoryError" in stderr


def test_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pairlab_simclient", "--version"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[2] / "containers" / "simclient")},
        check=True,
    )
    assert re.fullmatch(r"simclient \d+\.\d+\.\d+\n", out.stdout)


def test_declared_final_answer_wins_over_the_solution_file(layout: SimLayout) -> None:
    proc = run_sim(
        layout,
        "claude",
        PAIRLAB_SIM_EFFECTS='{"baseline": {"solve_p": 1.0}}',
        PAIRLAB_TASK_FINAL_ANSWER="INVENTORY_CACHE_DIR\n  (default ~/.cache)",
    )
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[-1] == "FINAL ANSWER: INVENTORY_CACHE_DIR (default ~/.cache)"
    assert layout.truth()["final_answer"] == "INVENTORY_CACHE_DIR (default ~/.cache)"


def test_work_time_follows_the_tokens_drawn() -> None:
    from pairlab_simclient.config import DEFAULT_CONFIG
    from pairlab_simclient.episode import simulate_work
    from pairlab_simclient.episode_env import read_episode_env
    from pairlab_simclient.usage_draw import draw_episode

    prompt = "Fix the median function."
    environ = {"PAIRLAB_SEED": "1", "PAIRLAB_EPISODE_ID": "r:t:0:baseline", "HOME": "/nonexistent"}
    draw = draw_episode(read_episode_env(environ, prompt, "/tmp"), prompt, DEFAULT_CONFIG)
    billed = sum(
        draw.total(d)
        for d in ("uncached_input", "cache_read", "cache_write_5m", "cache_write_1h", "output")
    )
    slow = {**DEFAULT_CONFIG, "latency": {"ms_per_1k_tokens": 0.5}}
    assert simulate_work(draw, slow) == pytest.approx(0.5 * billed / 1e6)
    assert simulate_work(draw, {**DEFAULT_CONFIG, "latency": {"ms_per_1k_tokens": 0}}) == 0.0
