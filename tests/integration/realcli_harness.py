"""Run the real Claude Code / Codex against the provider emulator through the local backend.

Each episode is a real local-backend episode (fresh HOME/CODEX_HOME, allowlisted
environment, PATH from ``agent_path`` so the profile command is just ``claude`` or
``codex``), with the command lines of shared/REAL-CLIS.md; treated arms reach the real
reference intervention (``token-optimizer mcp``) wired as ``intervention_wiring`` renders
it. These test profiles carry only what the emulator tests need (the runner profiles in
``runner_profiles/`` are what runs use; tests/integration/test_certify_real_clis.py
certifies them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from pairlab.adapters.backends.base import EpisodeSpec, GraphSeed, PreparedEpisode, RunOutcome
from pairlab.adapters.backends.local import LocalBackend
from pairlab.adapters.clients.claude import (
    CLAUDE_PRINT_FLAGS,
    claude_final_answer,
    claude_result_usage,
)
from pairlab.adapters.clients.codex import CODEX_EXEC_FLAGS, codex_final_answer, codex_turn_usage
from pairlab.adapters.clients.registry import resolve_cli
from pairlab.adapters.emulator import EpisodeHandle, EpisodeRegistration, Fault, ProviderEmulator
from pairlab.adapters.episode.grading import grade
from pairlab.adapters.usage import read_usage
from pairlab.adapters.usage.base import UsageReport
from pairlab.core.emulator.request_ledger import RequestRow, ground_truth
from pairlab.core.errors import EnvironmentUnavailable
from pairlab.core.schemas.catalog import TaskEntry
from pairlab.core.schemas.episode import GraderCheck
from pairlab.core.schemas.profile import RunnerProfile
from pairlab.core.schemas.usage import UsageVector
from tests.intervention_wiring import (
    EMPTY_CLAUDE_MCP_CONFIG,
    claude_mcp_config_json,
    codex_arm_args,
)
from tests.support import CATALOG_DIR, require

Cli = Literal["claude", "codex"]
EPISODE_TIMEOUT_S = 240.0
CODEX_MODEL = "gpt-5.5"
TRACE = "token-optimizer-trace.jsonl"  # the intervention's own record of every JSON-RPC line


def require_cli(cli: Cli) -> None:
    """Skip (or, with PAIRLAB_REQUIRE_SERVICES=1, fail) when the pinned wheel is missing."""
    try:
        resolve_cli(cli)
    except EnvironmentUnavailable as exc:
        require(False, f"the real {cli} CLI: {exc.message}")


def _claude_mcp_config(arm: str) -> str:
    """The reference intervention (``token-optimizer mcp``) as treated arms wire it."""
    return EMPTY_CLAUDE_MCP_CONFIG if arm == "baseline" else claude_mcp_config_json()


def episode_profile(
    cli: Cli, handle: EpisodeHandle, *, with_mcp: bool, preview_tokens: int
) -> RunnerProfile:
    """A profile for one episode (Codex's provider override names the episode's URL)."""
    env = {
        "TOKEN_OPTIMIZER_PREVIEW_THRESHOLD_TOKENS": str(preview_tokens),
        "TOKEN_OPTIMIZER_PREVIEW_HEAD_TOKENS": str(max(1, preview_tokens // 2)),
        "TOKEN_OPTIMIZER_TRACE": "{state}/" + TRACE,
        "TMPDIR": "{state}",
    }
    if cli == "claude":
        env.update({"IS_SANDBOX": "1", "CLAUDE_CODE_TMPDIR": "{state}", "TERM": "dumb"})
        args = ["-p", "{prompt}", *CLAUDE_PRINT_FLAGS]
        arm_args = {
            arm: [
                "--strict-mcp-config",
                "--mcp-config",
                _claude_mcp_config(arm if with_mcp else "baseline"),
            ]
            for arm in ("baseline", "optimizer", "retrieval", "full")
        }
        usage_paths = [".claude/projects/**/*.jsonl"]
    else:
        args = [*CODEX_EXEC_FLAGS, "-m", CODEX_MODEL, *handle.codex_args(), "{prompt}"]
        mcp = codex_arm_args() if with_mcp else []
        arm_args = {
            "baseline": ["-c", "project_doc_max_bytes=0"],
            **{
                arm: ["-c", "project_doc_max_bytes=0", *mcp]
                for arm in ("optimizer", "retrieval", "full")
            },
        }
        usage_paths = [".codex/sessions/**/*.jsonl"]
    return RunnerProfile(
        client=cli,
        image="unused-local",
        command=[cli] if cli == "claude" else [cli, "exec"],  # arm args follow `exec`
        args=args,
        env=env,
        arm_args=arm_args,
        baseline_isolation={
            "description": "emulator test profile: fresh HOME, no MCP servers in the baseline",
            "fresh_home": True,
            "strips": ["mcp"],
            "probe": "none",
        },
        usage={"reader": cli, "paths": usage_paths},
        quota={"probe": "none"},
        certification={"level": "live-local"},
        timeout_s=EPISODE_TIMEOUT_S,
    )


@dataclass
class CliEpisode:
    cli: Cli
    task: TaskEntry
    handle: EpisodeHandle
    backend: LocalBackend
    prepared: PreparedEpisode
    outcome: RunOutcome

    @property
    def home(self) -> Path:
        return Path(self.prepared.mounts["home"])

    @property
    def workspace(self) -> Path:
        return Path(self.prepared.workdir)

    @property
    def state(self) -> Path:
        return Path(self.prepared.mounts["state"])

    def rows(self) -> list[RequestRow]:
        return self.handle.rows()

    def truth(self) -> UsageVector:
        return ground_truth(self.rows())

    def record_files(self) -> list[Path]:
        """The files the CLI wrote that the usage reader takes (transcripts / rollouts)."""
        root = self.home / (".claude/projects" if self.cli == "claude" else ".codex/sessions")
        return sorted(root.rglob("*.jsonl"))

    def read_records(self) -> UsageReport:
        return read_usage(self.cli, self.record_files())

    def own_usage(self) -> UsageVector | None:
        """The CLI's own account of the episode (Claude's result JSON; Codex's turn.completed)."""
        if self.cli == "claude":
            return claude_result_usage(self.outcome.stdout)
        return codex_turn_usage(self.outcome.stdout)

    def final_answer(self) -> str | None:
        if self.cli == "claude":
            return claude_final_answer(self.outcome.stdout)
        return codex_final_answer(self.outcome.stdout)

    def grade(self) -> list[GraderCheck]:
        return grade(self.backend, self.prepared, self.task, self.final_answer(), None)

    def describe(self) -> str:
        turns = [
            f"{r.request_index}:{r.status}:{r.turn.action if r.turn else '-'}" for r in self.rows()
        ]
        return f"{self.cli} {self.task.id}: exit {self.outcome.exit_code}, turns {turns}\nstderr: {self.outcome.stderr[-1500:]}"


def run_cli_episode(
    emulator: ProviderEmulator,
    backend: LocalBackend,
    cli: Cli,
    task: TaskEntry,
    *,
    seed: int = 0,
    wrong_probability: float = 0.0,
    faults: list[Fault] | None = None,
    oauth: bool = False,
    arm: str = "baseline",
    with_mcp: bool = False,
    preview_tokens: int = 600,
    account: str = "default",
    catalog: Path = CATALOG_DIR,
    graph_seed: GraphSeed | None = None,
) -> CliEpisode:
    require_cli(cli)
    handle = emulator.register_episode(
        EpisodeRegistration(
            task_id=task.id,
            arm=arm,
            seed=seed,
            account=account,
            faults=faults or [],
            wrong_probability=wrong_probability,
        )
    )
    profile = episode_profile(cli, handle, with_mcp=with_mcp, preview_tokens=preview_tokens)
    extra_env = handle.claude_env(oauth=oauth) if cli == "claude" else handle.codex_env()
    spec = EpisodeSpec(
        run_id="emulator-tests",
        episode_id=f"emulator-tests:{handle.token}:{arm}",
        pair_id=f"emulator-tests:{handle.token}",
        task_id=task.id,
        arm=arm,
        prompt=task.prompt,
        profile=profile,
        fixture_dir=catalog / "fixtures" / task.fixture,
        workspace_subdir=task.workspace,
        timeout_s=EPISODE_TIMEOUT_S,
        seed=seed,
        extra_env=extra_env,
        graph_seed=graph_seed,
    )
    prepared = backend.prepare(spec)
    outcome = backend.run(prepared)
    episode = CliEpisode(cli, task, handle, backend, prepared, outcome)
    if outcome.exit_code != 0:
        pytest.fail(f"the real CLI failed: {episode.describe()}")
    return episode
