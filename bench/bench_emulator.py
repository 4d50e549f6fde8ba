"""The provider emulator's cost beside a real CLI episode.

1. Real episodes: the bundled ``claude`` and ``codex`` run the core task
   ``refactor-rename-total`` (seeded script, 7-8 model requests) against the in-process
   emulator, invoked bare (fresh HOME, the REAL-CLIS.md command line). Figures: the
   episode's wall time (median), and the emulator's share of it = the summed server-side
   time of its requests (request read -> ledger row written, SSE included) / the wall
   time. Target: < 10 %.
2. Replay: the requests those CLIs actually sent (~40-50 KB bodies), posted again over
   HTTP to a fresh emulator, streamed and read to the end; client-observed latency per
   request, first request of a process (nothing memoised yet) and steady state.

Skipped (no rows) when the real CLIs' wheels are not installed.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from bench.result import Result
from pairlab.adapters.backends.local import agent_path
from pairlab.adapters.clients.claude import CLAUDE_PRINT_FLAGS
from pairlab.adapters.clients.codex import CODEX_EXEC_FLAGS
from pairlab.adapters.clients.registry import resolve_cli
from pairlab.adapters.emulator import EpisodeRegistration, ProviderEmulator
from pairlab.adapters.paths import catalog_dir
from pairlab.core.errors import EnvironmentUnavailable
from pairlab.core.schemas.catalog import load_suite

TASK = "refactor-rename-total"
EPISODES = 3
REPLAYS = 20
TARGET_SHARE = 0.10


def _argv(cli: str, handle, prompt: str, root: Path) -> list[str]:  # type: ignore[no-untyped-def]
    if cli == "claude":
        no_mcp = ["--strict-mcp-config", "--mcp-config", '{"mcpServers":{}}']
        return ["claude", "-p", prompt, *CLAUDE_PRINT_FLAGS, *no_mcp]
    model = ["-m", "gpt-5.5", *handle.codex_args(), "-o", str(root / "last.txt")]
    return ["codex", "exec", *CODEX_EXEC_FLAGS, *model, prompt]


def _episode(emulator: ProviderEmulator, cli: str, seed: int) -> tuple[float, list[float], Path]:
    suite = load_suite(catalog_dir(), "core")
    task = suite.task(TASK)
    handle = emulator.register_episode(
        EpisodeRegistration(task_id=TASK, seed=seed, wrong_probability=0)
    )
    with tempfile.TemporaryDirectory(prefix="bench-emulator-") as tmp:
        root = Path(tmp)
        workspace = root / "ws"
        shutil.copytree(suite.fixture_path(task), workspace)
        home = root / "home"
        (home / ".codex").mkdir(parents=True)
        env = {
            "PATH": agent_path("/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "TMPDIR": tmp,
        }
        if cli == "claude":
            env.update(
                {
                    "IS_SANDBOX": "1",
                    "CLAUDE_CODE_TMPDIR": tmp,
                    "TERM": "dumb",
                    **handle.claude_env(),
                }
            )
        else:
            env.update({"CODEX_HOME": str(home / ".codex"), **handle.codex_env()})
        started = time.perf_counter()
        done = subprocess.run(
            _argv(cli, handle, task.prompt, root),
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{cli} exited {done.returncode}: {done.stderr[-500:]}")
    rows = handle.rows()
    return wall, [r.duration_ms for r in rows], handle.ledger_path


def _replay(bodies: list[bytes], path: str) -> tuple[float, float]:
    """(first request ms, steady median ms) of replaying captured bodies to a fresh emulator."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        ProviderEmulator(Path(tmp), catalog_dir=catalog_dir()) as emu,
    ):
        handle = emu.register_episode(EpisodeRegistration(task_id=TASK, seed=1))
        url = handle.base_url() + path
        times: list[float] = []
        with httpx.Client(timeout=60) as http:
            for i in range(REPLAYS):
                body = bodies[i % len(bodies)]
                started = time.perf_counter()
                response = http.post(
                    url,
                    content=body,
                    headers={"content-type": "application/json", "x-api-key": "k"},
                )
                response.read()
                times.append((time.perf_counter() - started) * 1000)
                if response.status_code != 200:
                    raise RuntimeError(f"replay got {response.status_code}: {response.text[:200]}")
    return times[0], statistics.median(times[1:])


def run() -> list[Result]:
    try:
        for cli in ("claude", "codex"):
            resolve_cli(cli)  # type: ignore[arg-type]
    except EnvironmentUnavailable as exc:
        print(f"  skipped: {exc.message}")
        return []
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as tmp:
        ledgers = Path(tmp)
        with ProviderEmulator(ledgers, catalog_dir=catalog_dir(), keep_requests=True) as emulator:
            for cli in ("claude", "codex"):
                walls, shares, per_request, ledger = [], [], [], None
                for seed in range(EPISODES):
                    wall, durations, ledger = _episode(emulator, cli, seed)
                    walls.append(wall)
                    shares.append(sum(durations) / 1000 / wall)
                    per_request += durations
                share = statistics.median(shares)
                results += [
                    Result(
                        f"{cli} episode ({TASK}, {len(per_request) // EPISODES} requests), wall (median)",
                        statistics.median(walls),
                        "s",
                        "info",
                        True,
                    ),
                    Result(
                        f"{cli}: emulator time per request, server side (median)",
                        statistics.median(per_request),
                        "ms",
                        "info",
                        True,
                    ),
                    Result(
                        f"{cli}: emulator share of the episode's wall time (median)",
                        share * 100,
                        "%",
                        f"< {TARGET_SHARE:.0%}",
                        share < TARGET_SHARE,
                    ),
                ]
                assert ledger is not None
                kept = sorted(ledger.with_suffix(".requests").glob("*.json"))
                bodies = [p.read_bytes() for p in kept]
                path = "/v1/messages" if cli == "claude" else "/v1/responses"
                first, steady = _replay(bodies, path)
                size_kb = statistics.mean(len(b) for b in bodies) / 1024
                results += [
                    Result(
                        f"{cli}: replayed request, {size_kb:.0f} KB body, first of a process",
                        first,
                        "ms",
                        "info",
                        True,
                    ),
                    Result(
                        f"{cli}: replayed request, {size_kb:.0f} KB body, steady (median)",
                        steady,
                        "ms",
                        "info",
                        True,
                    ),
                ]
                _check_bodies(bodies)
    return results


def _check_bodies(bodies: list[bytes]) -> None:
    for body in bodies:
        json.loads(body)  # the captured bodies are the CLIs' own JSON


if __name__ == "__main__":
    for r in run():
        print(
            f"{r.name}: {r.figure:.3g} {r.unit} (target {r.target}) {'PASS' if r.passed else 'MISS'}"
        )
