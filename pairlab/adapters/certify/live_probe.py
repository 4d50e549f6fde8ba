"""The live certifier's probe: one real-CLI episode per arm and what it shows.

``LiveProbe`` runs the probe task (a catalog task and a seed whose script lists, reads and
edits files and runs a command) through the episode session, the emulator keeping every
request body; ``observe`` turns one episode into an ``Observation``: the planted markers in
the collected state, the planted text and the MCP servers offered in the request log, and
the intervention's own trace. :mod:`live` judges the observations.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pairlab.adapters.backends.base import BASELINE_ARM, EpisodeSpec, ExecutionBackend
from pairlab.adapters.certify.planted_config import MARKER_DIR, PlantedItem
from pairlab.adapters.clients.base import ServerListing
from pairlab.adapters.clients.registry import REAL_CLIS
from pairlab.adapters.episode.finding_evidence import lifecycle_of
from pairlab.adapters.episode.session import run_and_collect
from pairlab.adapters.paths import catalog_dir
from pairlab.adapters.run.provider import EpisodeEndpoint, RunEndpoint
from pairlab.core.schemas.catalog import load_suite
from pairlab.core.schemas.profile import IsolationFlag, RunnerProfile

PROBE_SUITE: Final = "core"
PROBE_TASK: Final = "fix-median"
# fix-median's script under seed 0 lists the files (`ls`), reads the README and the file,
# edits it and checks the syntax (`python3`): every arm runs a shell command a planted
# Codex rule can forbid (tests/unit pins the draw).
PROBE_SEED: Final = 0
PROBE_TIMEOUT_S: Final = 180.0
TRACE_FILE: Final = "token-optimizer-trace.jsonl"
# the host's HOME variables (a profile that allowlists them hands the episode the user's config)
HOST_HOME_VARS: Final = ("HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME")
FRESH_HOME: Final = IsolationFlag(
    args=["fresh HOME"], strips="the host user's own config (a fresh HOME per episode)"
)
VERSION_PATTERN = re.compile(r"\d+\.\d+\.\d+")


@dataclass
class Observation:
    """What one episode showed."""

    column: str
    exit_code: int | None = None
    error: str | None = None
    seen: set[str] = field(default_factory=set)  # planted item slugs
    servers: set[str] = field(default_factory=set)  # MCP servers offered to the model
    intervention_calls: int = 0  # tools/call the intervention answered (its trace)
    requests: int = 0
    # per request (in order): what it carried of the certified server
    listings: list[ServerListing] = field(default_factory=list)
    lifecycle: dict[str, Any] | None = None  # treated arms: claim 1's lifecycle events


def _bodies(registered: EpisodeEndpoint) -> list[dict[str, Any]]:
    folder = registered.ledger_path.with_suffix(".requests")
    bodies = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if isinstance(data, dict):
            bodies.append(data)
    return bodies


def normal_server(server: str) -> str:
    return server.replace("-", "_")  # Codex turns - into _ in namespaces


def _trace_calls(trace: Path) -> int:
    if not trace.is_file():
        return 0
    answered, calls = 0, set()
    for line in trace.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
            message = json.loads(entry["line"])
        except (ValueError, KeyError, TypeError):
            continue
        if entry.get("dir") == "in" and message.get("method") == "tools/call":
            calls.add(json.dumps(message.get("id")))
        elif entry.get("dir") == "out" and json.dumps(message.get("id")) in calls:
            answered += "result" in message and not message["result"].get("isError")
    return answered


def observe(
    column: str,
    client: str,
    registered: EpisodeEndpoint,
    collected: Path,
    items: list[PlantedItem],
    server: str,
) -> Observation:
    """The evidence of one episode: markers, request text, offered MCP servers, what each
    request carried of ``server`` (the certified intervention's), its trace."""
    every = _bodies(registered)
    # planted text counts wherever the CLI sent it; offered servers and listings are read
    # from model requests only (a ChatGPT login's Codex also posts analytics events)
    text = "\n".join(json.dumps(b, ensure_ascii=False) for b in every)
    bodies = [b for b in every if "model" in b and ("input" in b or "messages" in b)]
    servers: set[str] = set()
    for body in bodies:
        servers |= REAL_CLIS[client].offered_servers(body)
    markers_dir = collected / "state" / MARKER_DIR
    markers = {p.name for p in markers_dir.iterdir()} if markers_dir.is_dir() else set()
    seen = set()
    for item in items:
        normal = {normal_server(s) for s in servers}
        if (
            ("marker" in item.evidence and item.slug in markers)
            or ("text" in item.evidence and item.text in text)
            or ("mcp" in item.evidence and normal_server(item.server) in normal)
        ):
            seen.add(item.slug)
    return Observation(
        column=column,
        seen=seen,
        servers=servers,
        intervention_calls=_trace_calls(collected / "state" / TRACE_FILE),
        requests=len(bodies),
        listings=[REAL_CLIS[client].server_listing(body, server) for body in bodies],
    )


class LiveProbe:
    """Runs probe episodes of one profile against the run endpoint's emulator."""

    def __init__(
        self,
        name: str,
        profile: RunnerProfile,
        endpoint: RunEndpoint,
        scratch: Path,
        server: str,
        traced: bool,
    ):
        self.name, self.endpoint, self.scratch = name, endpoint, scratch
        self.server = server  # the certified intervention's MCP server name
        # the reference server writes a trace (TOKEN_OPTIMIZER_TRACE) and exposes claim 1's
        # lifecycle events; a third-party server does neither
        self.traced = traced
        env = {**profile.env, "TOKEN_OPTIMIZER_TRACE": "{state}/" + TRACE_FILE}
        self.profile = endpoint.profile.model_copy(update={"env": env})
        suite = load_suite(catalog_dir(), PROBE_SUITE)
        self.task = suite.task(PROBE_TASK)
        self.fixture = scratch / "fixture"
        shutil.copytree(suite.fixture_path(self.task), self.fixture)
        self.run_id = f"certify-{name}-{secrets.token_hex(3)}"
        self.count = 0

    @property
    def backend(self) -> ExecutionBackend:
        return self.endpoint.backend

    def episode(
        self, arm: str, profile: RunnerProfile | None = None
    ) -> tuple[EpisodeEndpoint, Path, str, int | None, str | None]:
        """(registration, collected dir, stdout + stderr, exit code, error)."""
        self.count += 1
        pair_id = f"{self.run_id}:{PROBE_TASK}:{self.count}"
        registered = self.endpoint.register(
            episode_id=f"{pair_id}:{arm}",
            task_id=PROBE_TASK,
            arm=arm,
            repetition=self.count,
            seed=PROBE_SEED,
        )
        spec = EpisodeSpec(
            run_id=self.run_id,
            episode_id=f"{pair_id}:{arm}",
            pair_id=pair_id,
            task_id=PROBE_TASK,
            arm=arm,
            prompt=self.task.prompt,
            profile=profile or self.profile,
            fixture_dir=self.fixture,
            workspace_subdir=self.task.workspace,
            model=self.profile.model,
            timeout_s=min(self.profile.timeout_s, PROBE_TIMEOUT_S),
            seed=PROBE_SEED,
            endpoint_url=registered.url,
        )
        dest = self.scratch / f"collected-{self.count}"
        _, outcome, _ = run_and_collect(self.backend, spec, dest)
        error = outcome.error or ("timed out" if outcome.timed_out else None)
        return registered, dest, outcome.stdout + "\n" + outcome.stderr, outcome.exit_code, error

    def observe(
        self, column: str, arm: str, items: list[PlantedItem], profile: RunnerProfile | None = None
    ) -> Observation:
        registered, collected, output, code, error = self.episode(arm, profile)
        seen = observe(column, self.profile.client, registered, collected, items, self.server)
        seen.exit_code, seen.error = code, error
        if arm != BASELINE_ARM and profile is None and self.traced:
            seen.lifecycle = lifecycle_of(self.profile.client, collected, TRACE_FILE)
        if code != 0 and error is None:
            seen.error = f"exit {code}: {output.strip()[-300:]}"
        return seen
