"""Ask an intervention's MCP server what it lists: started as a treated arm starts it,
driven over stdio to its ``initialize`` and ``tools/list`` answers.

The arm's profile is wired with the manifest (``core.intervention_wiring``), a pypi
intervention installed through pairlab's own installer into its cached environment
(``adapters/intervention_install``, local backend), and the arm's environment built with
the backends' own ``build_env`` + ``agent_path`` in fresh episode directories (HOME,
state, graph, a copy of a catalog fixture as the workspace). The server is spawned
with the command and args of the arm's ``--mcp-config`` document, in the workspace,
and spoken to as Claude Code speaks (JSON-RPC lines; its ``initialize`` parameters).

Used by certify and by ``eval``/``demo`` to check usage recipes against the real tools
(``core/recipe_check``), and by ``bench/bench_intervention_startup.py`` for the startup
figures. A streamable-HTTP server is not spawned here (``tools_listing`` refuses it with
``invalid-intervention``: its recipes cannot be checked yet). A server that fails to
answer in its ``startup_timeout_s`` is ``intervention-start-failed`` (exit 1).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from pairlab.adapters.backends.base import EpisodeSpec
from pairlab.adapters.backends.environment import EPISODE_TMP_SUBDIR, EpisodePaths, build_env
from pairlab.adapters.backends.local import agent_path
from pairlab.adapters.backends.workspace_repository import prepare_workspace
from pairlab.adapters.intervention_install import install_for_backend
from pairlab.adapters.interventions import LoadedIntervention
from pairlab.adapters.paths import catalog_dir
from pairlab.adapters.profiles import load_named_profile
from pairlab.core.errors import ExecutionError, InvalidInputError, ReasonCode
from pairlab.core.intervention_wiring import claude_mcp_config

PROFILE: Final = "claude"  # whose wiring starts the server (Codex starts the same command)
DEFAULT_FIXTURE: Final = "median-stats"  # fix-median's workspace
INITIALIZE: Final = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}}},
    "clientInfo": {"name": "claude-code", "title": "Claude Code", "version": "2.1.332"},
}


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str]
    cwd: Path


@dataclass(frozen=True)
class ToolsListing:
    """What the server answered: its ``tools`` (each as listed: name, description,
    inputSchema, ...), its ``serverInfo`` and the seconds from spawn to each answer."""

    arm: str
    tools: list[dict[str, Any]]
    server_info: dict[str, Any]
    initialize_s: float
    tools_list_s: float

    @property
    def names(self) -> list[str]:
        return [str(t.get("name")) for t in self.tools]


def arm_launch(
    loaded: LoadedIntervention, arm: str, root: Path, fixture: Path | None = None
) -> Launch:
    """argv, environment and cwd of the server as ``arm``'s CLI spawns it (episode
    directories made under ``root``; ``fixture`` copied as the workspace)."""
    if loaded.manifest.kind != "stdio":
        raise InvalidInputError(
            f"intervention '{loaded.manifest.id}': only a stdio server can be asked for its "
            "tools here",
            reason=ReasonCode.INVALID_INTERVENTION,
        )
    fixture = fixture or catalog_dir() / "fixtures" / DEFAULT_FIXTURE
    profile = install_for_backend(
        load_named_profile(PROFILE, intervention=loaded), loaded, "local", log=lambda _m: None
    )
    workspace_root = root / "workspace"
    shutil.copytree(fixture, workspace_root)
    home, state, graph = root / "home", root / "state", root / "graph"
    for d in (home, home / EPISODE_TMP_SUBDIR, state, graph):
        d.mkdir(parents=True, exist_ok=True)
    spec = EpisodeSpec(
        run_id="tools-list",
        episode_id=f"tools-list:{fixture.name}:0:{arm}",
        pair_id=f"tools-list:{fixture.name}:0",
        task_id=fixture.name,
        arm=arm,
        prompt="",
        profile=profile,
        fixture_dir=fixture,
        timeout_s=60,
        endpoint_url="http://127.0.0.1:9/tools-list",  # no server here talks to it
    )
    prepare_workspace(spec, workspace_root)  # a git repository when the manifest asks
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
    server = claude_mcp_config(loaded.manifest, arm)["mcpServers"][loaded.manifest.mcp_name]
    command = shutil.which(server["command"], path=env["PATH"])
    if command is None:
        raise ExecutionError(
            f"intervention '{loaded.manifest.id}': {server['command']} is not on the "
            f"{arm} arm's PATH",
            reason=ReasonCode.INTERVENTION_START_FAILED,
        )
    return Launch([command, *server["args"]], env, workspace_root)


def _reader(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _answer(lines: queue.Queue[str | None], want_id: int, deadline: float) -> dict[str, Any]:
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise TimeoutError(f"no answer to request {want_id} in time") from None
        if line is None:
            raise ConnectionError(f"the server closed stdout before answering request {want_id}")
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue  # not a JSON-RPC line (a log line on stdout); a client skips it too
        if isinstance(message, dict) and message.get("id") == want_id:
            if "error" in message:
                raise ConnectionError(f"request {want_id} failed: {message['error']}")
            result = message.get("result")
            return result if isinstance(result, dict) else {}


def ask_tools(launch: Launch, timeout_s: float, arm: str = "optimizer") -> ToolsListing:
    """Spawn the server, ``initialize``, ``tools/list`` (following ``nextCursor``), close
    its stdin (a stdio server exits on EOF)."""
    deadline = time.monotonic() + timeout_s
    began = time.perf_counter()
    proc = subprocess.Popen(
        launch.argv,
        cwd=launch.cwd,
        env=launch.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        bufsize=1,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True)
    reader.start()

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    try:
        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE})
        init = _answer(lines, 0, deadline)
        initialized = time.perf_counter()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for request_id in range(1, 51):
            params = {"cursor": cursor} if cursor else {}
            send({"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": params})
            page = _answer(lines, request_id, deadline)
            tools += [t for t in page.get("tools") or [] if isinstance(t, dict)]
            cursor = page.get("nextCursor") if isinstance(page.get("nextCursor"), str) else None
            if not cursor:
                break
        listed = time.perf_counter()
    except (TimeoutError, ConnectionError, BrokenPipeError) as exc:
        raise ExecutionError(
            f"{launch.argv[0]}: no tools/list within {timeout_s:g} s ({exc})",
            reason=ReasonCode.INTERVENTION_START_FAILED,
        ) from exc
    finally:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)  # EOF once the server is gone
        proc.stdout.close()
    info = init.get("serverInfo")
    return ToolsListing(
        arm=arm,
        tools=tools,
        server_info=info if isinstance(info, dict) else {},
        initialize_s=initialized - began,
        tools_list_s=listed - began,
    )


def tools_listing(loaded: LoadedIntervention, arm: str = "optimizer") -> ToolsListing:
    """The server's real ``tools/list`` for ``arm`` (installed first if it is a pypi
    intervention; fresh episode directories, removed after)."""
    with tempfile.TemporaryDirectory(prefix="pairlab-tools-list-") as tmp:
        launch = arm_launch(loaded, arm, Path(tmp))
        return ask_tools(launch, loaded.manifest.startup_timeout_s, arm)


__all__ = ["INITIALIZE", "Launch", "ToolsListing", "arm_launch", "ask_tools", "tools_listing"]
