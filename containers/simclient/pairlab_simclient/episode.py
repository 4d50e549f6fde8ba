"""One simulated episode end to end: draw, solve, graph, quota, records, ledger, truth."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from pairlab_simclient import __version__
from pairlab_simclient.claude_transcript import write_claude
from pairlab_simclient.codex_rollout import write_codex
from pairlab_simclient.config import arm_spec
from pairlab_simclient.episode_env import EpisodeEnv, format_ts
from pairlab_simclient.format_result import FILLER, FormatResult
from pairlab_simclient.gemini_session import write_gemini
from pairlab_simclient.home_scan import SeenConfig
from pairlab_simclient.mcp_ledger import build_ledger, summarize_ledger
from pairlab_simclient.quota import QuotaCharge, charge_quota
from pairlab_simclient.usage_draw import CallUsage, EpisodeDraw, draw_episode
from pairlab_simclient.workspace_effects import (
    apply_solution,
    read_final_answer,
    read_graph_findings,
    read_previous_marker,
    write_graph_marker,
)

TRUTH_FILE = "simclient-truth.json"
LEDGER_FILE = "mcp-ledger.jsonl"
UNSOLVED_ANSWER = "unable to complete the task"
RETRIEVAL_ARMS = ("retrieval", "full")


def _billed_tokens(fmt: str, call: CallUsage) -> int:
    """What one call consumes from the quota: the billed dimensions the format reports."""
    total = call.uncached_input + call.cache_read + call.output
    if fmt == "claude":
        total += call.cache_write_5m + call.cache_write_1h
    return total


def mid_episode_reset(env: EpisodeEnv, config: dict[str, Any]) -> list[str]:
    """The windows this episode resets half-way through (seeded by the episode)."""
    reset = config["quota"].get("mid_episode_reset", {})
    if env.rng("quota-reset").random() < float(reset.get("p", 0.0)):
        return list(reset.get("windows", []))
    return []


def ledger_for(env: EpisodeEnv, config: dict[str, Any], session_id: str) -> list[Any]:
    """The episode's MCP ledger entries (empty for untreated arms)."""
    if env.arm not in config["treated_arms"]:
        return []
    return build_ledger(
        env.rng("mcp-ledger"),
        env.arm,
        session_id,
        env.started_at,
        float(config["ledger"]["retry_p"]),
    )


def run_episode(
    env: EpisodeEnv,
    config: dict[str, Any],
    prompt: str,
    fmt: str,
    model: str | None,
    output_format: str | None,
    seen: SeenConfig,
) -> str:
    """Run the episode; returns what to print on stdout."""
    arm_spec(config, env.arm)  # unknown arm -> ConfigError before anything is written
    draw = draw_episode(env, prompt, config)
    simulate_work(draw, config)

    solved = draw.solved and env.solution_dir is not None and env.solution_dir.is_dir()
    written: list[str] = []
    if solved:
        assert env.solution_dir is not None
        written = apply_solution(env.solution_dir, env.workspace)
    answer = read_final_answer(env.solution_dir, env.final_answer) if solved else UNSOLVED_ANSWER
    rng = env.rng("narrative")
    final_text = f"{rng.choice(FILLER)}\nFINAL ANSWER: {answer}"

    graph: dict[str, Any] | None = None
    if env.graph_dir is not None:
        previous = read_previous_marker(env.graph_dir)
        findings = (
            read_graph_findings(env.graph_dir)
            if env.arm in RETRIEVAL_ARMS and env.graph_dir.is_dir()
            else []
        )
        graph = {"findings": findings, "previous_marker": previous}
        write_graph_marker(
            env.graph_dir,
            {
                "episode_id": env.episode_id,
                "arm": env.arm,
                "finding_ids": findings,
                "written_at": format_ts(env.started_at),
            },
        )

    quota: QuotaCharge | None = None
    if env.account_dir is not None:
        quota = charge_quota(
            env.account_dir,
            env.started_at,
            [_billed_tokens(fmt, c) for c in draw.calls],
            config,
            episode_id=env.episode_id,
            quota_factor=float(arm_spec(config, env.arm).get("quota_factor", 1.0)),
            reset_windows=mid_episode_reset(env, config),
        )
    else:
        print(
            "simclient: PAIRLAB_SIM_ACCOUNT_DIR is not set: no simulated quota kept",
            file=sys.stderr,
        )

    result = _write_records(env, draw, prompt, fmt, model, final_text, quota, output_format)
    entries = ledger_for(env, config, result.session_id)
    if env.state_dir is not None:
        env.state_dir.mkdir(parents=True, exist_ok=True)
        if entries:
            with (env.state_dir / LEDGER_FILE).open("a", encoding="utf-8") as fh:
                for entry in entries:
                    fh.write(json.dumps(entry.row, separators=(",", ":")) + "\n")
        truth = _truth(env, draw, fmt, result, solved, answer, seen, graph, quota, entries, written)
        (env.state_dir / TRUTH_FILE).write_text(
            json.dumps(truth, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
    return result.stdout


def _write_records(
    env: EpisodeEnv,
    draw: EpisodeDraw,
    prompt: str,
    fmt: str,
    model: str | None,
    final_text: str,
    quota: QuotaCharge | None,
    output_format: str | None,
) -> FormatResult:
    if fmt == "claude":
        return write_claude(env, draw, prompt, model, final_text)
    if fmt == "codex":
        return write_codex(env, draw, prompt, model, final_text, quota)
    result = write_gemini(env, draw, prompt, model, final_text)
    if output_format == "text":
        result.stdout = final_text + "\n"
    return result


def _truth(
    env: EpisodeEnv,
    draw: EpisodeDraw,
    fmt: str,
    result: FormatResult,
    solved: bool,
    answer: str,
    seen: SeenConfig,
    graph: dict[str, Any] | None,
    quota: QuotaCharge | None,
    entries: list[Any],
    written: list[str],
) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "simclient_version": __version__,
        "format": fmt,
        "arm": env.arm,
        "episode_id": env.episode_id,
        "task_id": env.task_id,
        "session_id": result.session_id,
        "model": result.model,
        "vector": result.vector,
        "api_calls": result.api_calls,
        "solved": solved,
        "final_answer": answer,
        "files_written": written,
        "seen": seen.as_dict(),
        "records": [_display(p, env.home) for p in result.record_paths],
        "graph": graph,
        "quota": None
        if quota is None
        else {"before": quota.before, "after": quota.after, "charge": quota.entry},
        "ledger": summarize_ledger(entries) if entries else None,
        "task_factor": draw.task_factor,
        "means": draw.means,
        **result.extra,
    }


def _display(path: Path, home: Path) -> str:
    try:
        return "$HOME/" + path.relative_to(home).as_posix()
    except ValueError:
        return str(path)


BILLED = ("uncached_input", "cache_read", "cache_write_5m", "cache_write_1h", "output")


def simulate_work(draw: Any, config: dict[str, Any]) -> float:
    """Sleep in proportion to the billed tokens drawn; returns the seconds slept."""
    per_1k_ms = float(config.get("latency", {}).get("ms_per_1k_tokens", 0.0))
    tokens = sum(draw.total(dim) for dim in BILLED)
    seconds = max(per_1k_ms, 0.0) * tokens / 1000.0 / 1000.0
    if seconds > 0:
        time.sleep(seconds)
    return seconds
