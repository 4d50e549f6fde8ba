"""Run simclient as a real subprocess in a throwaway HOME/state/workspace layout.

Shared by the simclient unit tests: each run gets its own directories under a
pytest tmp_path, an environment built from scratch (never the parent's), and
returns the completed process plus the parsed truth file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import REPO_ROOT

SIMCLIENT_SRC = REPO_ROOT / "containers" / "simclient"
FIXED_NOW = "2025-05-20T10:00:00.000Z"


@dataclass
class SimLayout:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def graph(self) -> Path:
        return self.root / "graph"

    @property
    def account(self) -> Path:
        return self.root / "account"

    @property
    def solution(self) -> Path:
        return self.root / "solution"

    def make(self) -> SimLayout:
        for d in (self.home, self.workspace, self.state, self.graph):
            d.mkdir(parents=True, exist_ok=True)
        return self

    def truth(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(
            (self.state / "simclient-truth.json").read_text(encoding="utf-8")
        )
        return data


def sim_env(layout: SimLayout, arm: str, episode_id: str, **extra: str) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": str(SIMCLIENT_SRC),
        "HOME": str(layout.home),
        "TOKEN_OPTIMIZER_EXPERIMENT_ARM": arm,
        "PAIRLAB_SEED": "1234",
        "PAIRLAB_RUN_ID": "run1",
        "PAIRLAB_EPISODE_ID": episode_id,
        "PAIRLAB_TASK_ID": "median-stats",
        "PAIRLAB_STATE_DIR": str(layout.state),
        "PAIRLAB_GRAPH_DIR": str(layout.graph),
        "PAIRLAB_WORKSPACE": str(layout.workspace),
        "PAIRLAB_SIM_ACCOUNT_DIR": str(layout.account),
        "CLAUDE_CONFIG_DIR": str(layout.home / ".claude"),
        "CODEX_HOME": str(layout.home / ".codex"),
        "GEMINI_CLI_HOME": str(layout.home),
        "PAIRLAB_SIM_NOW": FIXED_NOW,
    }
    if layout.solution.is_dir():
        env["PAIRLAB_TASK_SOLUTION"] = str(layout.solution)
    env.update(extra)
    return {k: v for k, v in env.items() if v != ""}


def run_sim(
    layout: SimLayout,
    fmt: str,
    arm: str = "baseline",
    episode_id: str = "run1:median-stats:0:baseline",
    prompt: str = "Fix the median function in stats.py so the tests pass.",
    args: tuple[str, ...] = (),
    timeout_s: float = 60,
    **extra: str,
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pairlab_simclient", "exec", "--format", fmt, *args, prompt]
    return subprocess.run(
        argv,
        env=sim_env(layout, arm, episode_id, **extra),
        cwd=layout.workspace,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
