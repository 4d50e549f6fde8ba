"""``workspace: git-repository``: the episode's workspace is the fixture as a git
repository with one fixed commit (the same id in every episode), in every arm; a plain
copy otherwise (adapters/backends/workspace_repository)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from pairlab.adapters.backends.base import EpisodeSpec
from pairlab.adapters.backends.local import LocalBackend
from pairlab.adapters.backends.workspace_repository import make_repository
from pairlab.adapters.interventions import load_intervention
from pairlab.adapters.profiles import load_named_profile
from tests.support import CATALOG_DIR

FIXTURE = CATALOG_DIR / "fixtures" / "median-stats"


def _head(workspace: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=workspace, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_commit_is_the_same_in_every_episode(tmp_path: Path) -> None:
    heads = []
    for n in range(2):
        shutil.copytree(FIXTURE, tmp_path / str(n))
        make_repository(tmp_path / str(n))
        heads.append(_head(tmp_path / str(n)))
    assert heads[0] == heads[1]
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=tmp_path / "0", capture_output=True, text=True
    )
    assert status.returncode == 0 and status.stdout == ""  # every fixture file committed


def _prepared(tmp_path: Path, intervention: str, arm: str) -> Path:
    profile = load_named_profile("claude", intervention=load_intervention(intervention))
    spec = EpisodeSpec(
        run_id="r",
        episode_id=f"r:fix-median:0:{arm}",
        pair_id="r:fix-median:0",
        task_id="fix-median",
        arm=arm,
        prompt="",
        profile=profile,
        fixture_dir=FIXTURE,
        timeout_s=60,
        endpoint_url="http://127.0.0.1:9/never-called",  # prepared, never run
    )
    backend = LocalBackend(base_dir=tmp_path / arm / intervention, clean_orphans=False)
    prepared = backend.prepare(spec)
    assert prepared.root is not None
    return prepared.root / "workspace"


def test_every_arm_of_a_repository_intervention_gets_it_and_others_a_copy(tmp_path: Path) -> None:
    for arm in ("baseline", "optimizer"):
        assert (_prepared(tmp_path, "mcp-server-git", arm) / ".git").is_dir()
        assert not (_prepared(tmp_path, "reference", arm) / ".git").exists()
