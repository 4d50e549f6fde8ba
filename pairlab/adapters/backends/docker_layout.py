"""Where an episode's files live inside its Docker container, and how they get there.

The workspace is mounted at ``/pairlab/workspace``; the three roles collected after the run
(``home``, ``graph``, ``state``) side by side under ``/pairlab/agent``, so that one archive of
that directory collects them all; the task solution (read-only) and the simulator's account
dir (read-write) beside them. Before the container starts, the four volume roots are laid
out on the host -- the fixture copied, the profile's home seed and the findings graph
planted -- and packed into the created container in one archive.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pairlab.adapters.backends.base import EpisodeSpec
from pairlab.adapters.backends.collection import COLLECTED_ROLES
from pairlab.adapters.backends.environment import EpisodePaths, seed_graph_dir, seed_home
from pairlab.adapters.backends.workspace_repository import prepare_workspace

MOUNT_ROOT = "/pairlab"
AGENT_ROOT = f"{MOUNT_ROOT}/agent"  # parent of the collected roles' mounts
VOLUME_ROLES = ("workspace", "home", "graph", "state")
MOUNT_PATHS = {
    "workspace": f"{MOUNT_ROOT}/workspace",
    **{role: f"{AGENT_ROOT}/{role}" for role in COLLECTED_ROLES},
}
SOLUTION_MOUNT = f"{MOUNT_ROOT}/solution"
ACCOUNT_MOUNT = f"{MOUNT_ROOT}/account"


def workdir_for(sub: str) -> str:
    """The agent's working directory: the workspace, or the task's subdirectory of it."""
    return f"{MOUNT_ROOT}/workspace" if sub == "." else f"{MOUNT_ROOT}/workspace/{sub}"


def episode_paths(spec: EpisodeSpec, workdir: str, solution: Path | None) -> EpisodePaths:
    """Where the episode's roles are mounted inside its container."""
    return EpisodePaths(
        workspace_root=MOUNT_PATHS["workspace"],
        workdir=workdir,
        home=MOUNT_PATHS["home"],
        graph=MOUNT_PATHS["graph"],
        state=MOUNT_PATHS["state"],
        solution=SOLUTION_MOUNT if solution is not None else None,
        account=ACCOUNT_MOUNT if spec.sim_account_dir is not None else None,
    )


@contextmanager
def staged_tree(spec: EpisodeSpec, sub: str) -> Iterator[Path]:
    """The four volume roots laid out on the host, to be packed into the container."""
    staging = Path(tempfile.mkdtemp(prefix="pairlab-stage-"))
    try:
        shutil.copytree(spec.fixture_dir, staging / "workspace", symlinks=True)
        prepare_workspace(spec, staging / "workspace")
        (staging / "workspace" / sub).mkdir(parents=True, exist_ok=True)
        agent = staging / Path(AGENT_ROOT).relative_to(MOUNT_ROOT)
        for role in COLLECTED_ROLES:
            (agent / role).mkdir(parents=True)
        seed_home(spec, agent / "home")
        seed_graph_dir(spec, agent / "graph", staging / "workspace", staging / "workspace" / sub)
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)
