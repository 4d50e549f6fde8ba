"""An episode's workspace made a git repository, for an intervention that asks for it
(the manifest's ``workspace: git-repository``).

A catalog workspace is a plain copy of its fixture. Some MCP servers refuse a directory
that is not a VCS root (measured: every ``mcp-server-git`` tool answers ``Error
executing tool git_status: <workspace>``; ``code-review-graph`` answers ``repo_root does
not look like a project root``). For such an intervention every arm of the run -- the
baseline too, so the two episodes of a pair start from the same tree -- gets the copy
as a repository: ``git init``, every fixture file added, one commit with a fixed author,
committer and date, so the commit id is the same in every episode of a task. Both
backends call it on the host copy before the episode starts (Docker packs the ``.git``
into the workspace volume, owned by the agent's user like every other file).

The host needs ``git`` (the Docker images of such servers install it too, their
manifest's ``install.debian``); without it the episode fails with ``execution-failed``
and says why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Final

from pairlab.adapters.backends.base import EpisodeSpec
from pairlab.core.errors import ExecutionError, ReasonCode

FIXED_DATE: Final = "2026-01-01T00:00:00+00:00"
IDENTITY: Final = {
    "GIT_AUTHOR_NAME": "pairlab",
    "GIT_AUTHOR_EMAIL": "fixture@pairlab.invalid",
    "GIT_AUTHOR_DATE": FIXED_DATE,
    "GIT_COMMITTER_NAME": "pairlab",
    "GIT_COMMITTER_EMAIL": "fixture@pairlab.invalid",
    "GIT_COMMITTER_DATE": FIXED_DATE,
    # no user or system config (hooks, signing, templates) reaches the fixture's repository
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def wants_repository(spec: EpisodeSpec) -> bool:
    stamp = spec.profile.intervention
    return stamp is not None and stamp.workspace == "git-repository"


def make_repository(workspace: Path) -> None:
    """``workspace`` as a git repository with its files in one fixed commit."""
    git = shutil.which("git")
    if git is None:
        raise ExecutionError(
            "the intervention needs the workspace as a git repository, and git is not on "
            "this host's PATH (install git)",
            reason=ReasonCode.EXECUTION_FAILED,
        )
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(workspace), **IDENTITY}
    steps = (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["commit", "-q", "--no-verify", "-m", "fixture"],
    )
    for args in steps:
        done = subprocess.run(
            [git, *args], cwd=workspace, env=env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise ExecutionError(
                f"git {' '.join(args)} in the workspace failed: {done.stderr.strip()[:300]}",
                reason=ReasonCode.EXECUTION_FAILED,
            )


def prepare_workspace(spec: EpisodeSpec, workspace: Path) -> None:
    """Make the copied fixture a repository when the run's intervention asks for it."""
    if wants_repository(spec):
        make_repository(workspace)


__all__ = ["make_repository", "prepare_workspace", "wants_repository"]
