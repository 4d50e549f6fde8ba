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
``initialize`` parameters): time from spawn to the ``initialize`` answer and to the
``tools/list`` answer, and the CPU time of the server process (its rusage after it
exits on stdin EOF). One warm-up start, then ``REPS`` starts (``PAIRLAB_BENCH_STARTUP_REPS``,
default 10), each in fresh episode directories, as every episode pays it.

Figures only (target ``info``): the issue gives no target, and timings are never asserted
in tests. Run: ``uv run python bench/run_all.py intervention_startup`` or
``uv run python -m bench.bench_intervention_startup [ID ...]``.
"""

from __future__ import annotations

import json
import os
import queue
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bench.result import Result

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pairlab.adapters.backends.base import EpisodeSpec  # noqa: E402
from pairlab.adapters.backends.environment import (  # noqa: E402
    EPISODE_TMP_SUBDIR,
    EpisodePaths,
    build_env,
)
from pairlab.adapters.backends.local import agent_path  # noqa: E402
from pairlab.adapters.intervention_install import install_for_backend  # noqa: E402
from pairlab.adapters.interventions import (  # noqa: E402
    LoadedIntervention,
    load_intervention,
    shipped_intervention_ids,
)
from pairlab.adapters.profiles import load_named_profile  # noqa: E402
from pairlab.core.intervention_wiring import claude_mcp_config  # noqa: E402
from tests.intervention_harness import INITIALIZE_CLAUDE  # noqa: E402

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


def _arm_launch(loaded: LoadedIntervention, root: Path) -> tuple[list[str], dict[str, str], Path]:
    """argv, environment and cwd of the server as the optimizer arm's CLI spawns it."""
    profile = install_for_backend(
        load_named_profile(PROFILE, intervention=loaded), loaded, "local", log=lambda _m: None
    )
    workspace_root = root / "workspace"
    shutil.copytree(FIXTURE, workspace_root)
    home, state, graph = root / "home", root / "state", root / "graph"
    for d in (home, home / EPISODE_TMP_SUBDIR, state, graph):
        d.mkdir(parents=True, exist_ok=True)
    spec = EpisodeSpec(
        run_id="bench-startup",
        episode_id=f"bench-startup:fix-median:0:{ARM}",
        pair_id="bench-startup:fix-median:0",
        task_id="fix-median",
        arm=ARM,
        prompt="",
        profile=profile,
        fixture_dir=FIXTURE,
        timeout_s=60,
        # the agent's endpoint ({emulatorUrl}); no server here talks to it
        endpoint_url="http://127.0.0.1:9/bench-startup",
    )
    paths = EpisodePaths(
        workspace_root=str(workspace_root),
        workdir=str(workspace_root),
        home=str(home),
        graph=str(graph),
        state=str(state),
        solution=None,
        account=None,
    )
    env, _secrets = build_env(spec, paths, os.environ, as_root=os.geteuid() == 0)
    env["PATH"] = agent_path(env.get("PATH"), profile.treatment.path_prepend)
    server = claude_mcp_config(loaded.manifest, ARM)["mcpServers"][loaded.manifest.mcp_name]
    command = shutil.which(server["command"], path=env["PATH"])
    if command is None:
        raise RuntimeError(f"{server['command']} not on the arm's PATH")
    return [command, *server["args"]], env, workspace_root


def _reader(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _answer(lines: queue.Queue[str | None], want_id: int, deadline: float) -> dict[str, Any]:
    while True:
        line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        if line is None:
            raise RuntimeError(f"server closed stdout before answering request {want_id}")
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue  # not a JSON-RPC line (a log line on stdout); a client skips it too
        if isinstance(message, dict) and message.get("id") == want_id:
            if "error" in message:
                raise RuntimeError(f"request {want_id} failed: {message['error']}")
            return message


def _start_once(loaded: LoadedIntervention) -> Start:
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        argv, env, cwd = _arm_launch(loaded, Path(tmp))
        deadline = time.monotonic() + loaded.manifest.startup_timeout_s
        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        assert proc.stdin is not None and proc.stdout is not None
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
        try:
            proc.stdin.write(
                json.dumps(
                    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE_CLAUDE}
                )
                + "\n"
            )
            proc.stdin.flush()
            _answer(lines, 0, deadline)
            initialized = time.perf_counter()
            proc.stdin.write(
                json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
            )
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}) + "\n")
            proc.stdin.flush()
            listed = _answer(lines, 1, deadline)
            done = time.perf_counter()
        finally:
            proc.stdin.close()  # a stdio server exits on EOF
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (cpu_after.ru_utime + cpu_after.ru_stime) - (
            cpu_before.ru_utime + cpu_before.ru_stime
        )
        return Start(initialized - began, done - began, cpu, len(listed["result"]["tools"]))


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
