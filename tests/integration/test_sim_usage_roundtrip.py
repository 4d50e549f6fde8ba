"""The simulator's records read back to exactly the usage it drew (its truth file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pairlab.adapters.quota import make_probe
from pairlab.adapters.usage import read_usage
from tests.support import REPO_ROOT

SIMCLIENT = REPO_ROOT / "containers" / "simclient"


def run_sim(tmp: Path, fmt: str, seed: str, arm: str) -> tuple[dict[str, Any], Path, str]:
    home, state, ws, acct = (tmp / d for d in ("home", "state", "ws", "acct"))
    for d in (home, state, ws, acct):
        d.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(SIMCLIENT),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CODEX_HOME": str(home / ".codex"),
        "GEMINI_CLI_HOME": str(home),
        "PAIRLAB_STATE_DIR": str(state),
        "PAIRLAB_WORKSPACE": str(ws),
        "PAIRLAB_SIM_ACCOUNT_DIR": str(acct),
        "PAIRLAB_SEED": seed,
        "PAIRLAB_RUN_ID": "run-rt",
        "PAIRLAB_TASK_ID": "rounding",
        "PAIRLAB_PAIR_ID": f"run-rt:rounding:{seed}",
        "PAIRLAB_EPISODE_ID": f"run-rt:rounding:{seed}:{arm}",
        "TOKEN_OPTIMIZER_EXPERIMENT_ARM": arm,
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pairlab_simclient",
            "exec",
            "--format",
            fmt,
            "fix the rounding bug",
        ],
        env=env,
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    truth = json.loads((state / "simclient-truth.json").read_text())
    return truth, home, done.stdout


@pytest.mark.parametrize("fmt", ["claude", "codex", "gemini"])
@pytest.mark.parametrize(("seed", "arm"), [("1", "baseline"), ("2", "full"), ("3", "optimizer")])
def test_reader_reproduces_the_drawn_vector(tmp_path: Path, fmt: str, seed: str, arm: str) -> None:
    if not (SIMCLIENT / "pairlab_simclient" / "cli.py").exists():
        pytest.fail("containers/simclient/pairlab_simclient is missing")
    truth, home, stdout = run_sim(tmp_path, fmt, seed, arm)
    paths = [home]
    if fmt == "gemini":  # the json printed on stdout is part of the episode's records
        out = tmp_path / "gemini-stdout.json"
        out.write_text(stdout)
        paths.append(out)
    report = read_usage(fmt, paths)
    assert report.vector.model_dump() == truth["vector"]
    assert report.api_calls == truth["api_calls"]
    assert set(report.by_model) == {truth["model"]}
    assert report.session_id == truth["session_id"]
    assert report.provenance.get("malformed-line", 0) == 0
    assert report.provenance.get("unreadable-file", 0) == 0


def test_sim_probe_and_codex_rate_limits_match_the_simulated_account(tmp_path: Path) -> None:
    truth, home, _ = run_sim(tmp_path, "codex", "4", "baseline")
    after = truth["quota"]["after"]["windows"]
    probe_obs = {o.window: o for o in make_probe("sim", account_dir=tmp_path / "acct").snapshot()}
    for window, state in after.items():
        assert probe_obs[window].used_percent == float(state["used_percent"])
        assert probe_obs[window].reset_id == state["reset_id"]
    rollout = {
        o.window: o for o in make_probe("codex-rollout", codex_home=home / ".codex").snapshot()
    }
    assert rollout["five-hour"].used_percent == float(after["five-hour"]["used_percent"])
    assert rollout["five-hour"].resets_at == probe_obs["five-hour"].resets_at
