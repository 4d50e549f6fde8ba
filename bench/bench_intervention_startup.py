"""Intervention startup overhead per episode: each shipped manifest's MCP server, started
as a treated arm starts it, timed to its ``initialize`` and ``tools/list`` answers.

For every manifest in ``interventions/`` the bench wires the ``claude`` profile with it
(``pairlab.core.intervention_wiring``, as ``pairlab episode run`` does), installs a pypi
intervention through pairlab's own installer into its cached environment
(``adapters/intervention_install``, local backend), and builds the optimizer arm's
environment with the backends' own ``build_env`` + ``agent_path`` in fresh episode
directories (HOME, state, graph, a copy of the ``fix-median`` fixture as the workspace).
The server is then spawned with the command and args of the arm's ``--mcp-config``
document, in the workspace, and driven over stdio (JSON-RPC lines, Claude Code's
``initialize`` parameters) -- all of it ``pairlab/adapters/mcp_tools_list.py``, which
certify and the usage-recipe check use too: time from spawn to the ``initialize`` answer and to the
``tools/list`` answer, and the CPU time of the server process (its rusage after it
exits on stdin EOF). One warm-up start, then ``REPS`` starts (``PAIRLAB_BENCH_STARTUP_REPS``,
default 10), each in fresh episode directories, as every episode pays it.

Figures only (target ``info``): the issue gives no target, and timings are never asserted
in tests. Run: ``uv run python bench/run_all.py intervention_startup`` or
``uv run python -m bench.bench_intervention_startup [ID ...]``.
"""

from __future__ import annotations

import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.result import Result

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pairlab.adapters.interventions import (  # noqa: E402
    LoadedIntervention,
    load_intervention,
    shipped_intervention_ids,
)
from pairlab.adapters.mcp_tools_list import arm_launch, ask_tools  # noqa: E402

PROFILE = "claude"
ARM = "optimizer"  # every shipped manifest supports it
FIXTURE = ROOT / "catalog" / "fixtures" / "median-stats"  # fix-median's workspace
REPS = int(os.environ.get("PAIRLAB_BENCH_STARTUP_REPS", "10"))
# real Claude Code episodes per intervention whose MCP log is read (0: none)
EPISODES = int(os.environ.get("PAIRLAB_BENCH_STARTUP_EPISODES", "3"))
# Claude Code's per-server log (HOME/.cache/claude-cli-nodejs/<cwd>/mcp-logs-<server>/*.jsonl)
CONNECTED = re.compile(r"Successfully connected \(transport: stdio\) in (\d+)ms")


@dataclass(frozen=True)
class Start:
    initialize_s: float
    tools_list_s: float
    cpu_s: float
    tools: int


def _start_once(loaded: LoadedIntervention) -> Start:
    """One start in fresh episode directories (``adapters/mcp_tools_list``, which also
    serves certify and the recipe check), timed by the adapter; the server's CPU time is
    its rusage after it exits on stdin EOF."""
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        launch = arm_launch(loaded, ARM, Path(tmp), FIXTURE)
        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        listing = ask_tools(launch, loaded.manifest.startup_timeout_s, ARM)
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (cpu_after.ru_utime + cpu_after.ru_stime) - (
            cpu_before.ru_utime + cpu_before.ru_stime
        )
        return Start(listing.initialize_s, listing.tools_list_s, cpu, len(listing.tools))


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10, method="inclusive")[8]


def measure(intervention_id: str, reps: int = REPS) -> list[Result]:
    loaded = load_intervention(intervention_id)
    _start_once(loaded)  # warm-up: install (if needed), page cache, bytecode
    starts = [_start_once(loaded) for _ in range(reps)]
    init_ms = [s.initialize_s * 1e3 for s in starts]
    list_ms = [s.tools_list_s * 1e3 for s in starts]
    cpu_ms = [s.cpu_s * 1e3 for s in starts]
    label = f"{intervention_id} ({loaded.manifest.version}, {ARM} arm, {reps} starts)"
    return [
        Result(
            f"{label}: spawn -> initialize, median", statistics.median(init_ms), "ms", "info", True
        ),
        Result(f"{label}: spawn -> initialize, p90", _p90(init_ms), "ms", "info", True),
        Result(
            f"{label}: spawn -> tools/list, median", statistics.median(list_ms), "ms", "info", True
        ),
        Result(f"{label}: spawn -> tools/list, p90", _p90(list_ms), "ms", "info", True),
        Result(f"{label}: server CPU time, median", statistics.median(cpu_ms), "ms", "info", True),
        Result(f"{label}: tools listed", float(starts[-1].tools), "tools", "info", True),
    ]


def claude_connect_ms(intervention_id: str, episodes: int = EPISODES) -> list[float]:
    """Claude Code's own figure: "Successfully connected ... in N ms" from its MCP log of
    real ``pairlab episode run --profile claude --arm optimizer`` episodes (fix-median,
    the provider emulator), one per episode; an episode without the line adds nothing."""
    found: list[float] = []
    for seed in range(episodes):
        with tempfile.TemporaryDirectory(prefix="bench-startup-ep-") as tmp:
            subprocess.run(
                [
                    *(str(Path(sys.executable).parent / "pairlab"), "episode", "run"),
                    *("--profile", PROFILE, "--task", "fix-median", "--arm", ARM),
                    *("--intervention", intervention_id, "--seed", str(seed), "--out", tmp),
                ],
                capture_output=True,
                check=False,
                timeout=300,
            )
            for log in Path(tmp).glob("collected/home/.cache/claude-cli-nodejs/*/mcp-logs-*/*"):
                for match in CONNECTED.finditer(log.read_text(errors="replace")):
                    found.append(float(match.group(1)))
    return found


def _episode_results(intervention_id: str) -> list[Result]:
    if EPISODES <= 0:
        return []
    connects = claude_connect_ms(intervention_id)
    if not connects:
        return []  # no figure rather than a zero
    return [
        Result(
            f"{intervention_id}: Claude Code 'connected in' (its MCP log, median of "
            f"{len(connects)} episodes)",
            statistics.median(connects),
            "ms",
            "info",
            True,
        )
    ]


def run(ids: list[str] | None = None) -> list[Result]:
    results: list[Result] = []
    for intervention_id in ids or shipped_intervention_ids():
        results.extend(measure(intervention_id))
        results.extend(_episode_results(intervention_id))
    return results


if __name__ == "__main__":
    for result in run(sys.argv[1:] or None):
        print(f"{result.name}: {result.figure:.4g} {result.unit}", flush=True)
