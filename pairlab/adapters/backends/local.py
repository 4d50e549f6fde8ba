"""The local-process backend: one fresh temporary tree per episode, one process group per run.

Layout of an episode root (``<base>/pairlab-ep-<hash>-<random>/``)::

    workspace/   the fixture, copied; the agent runs in workspace/<task workspace>
    home/        a fresh HOME (client config dirs inside it); treated arms get the home seed
    graph/ state/
    owner.json   run id, episode id and the owning process (for orphan cleanup)

The environment is built from the profile's allowlist (see ``environment``); a treated
arm gets an installed pypi intervention's command directory first on PATH (its command
alone, a link into its environment's bin; ``treatment.path_prepend``,
``adapters/intervention_install``), then
the venv's bin directory is put on PATH so console scripts installed with
pairlab (``simclient``) resolve, then the directories of the real CLIs bundled in
the pinned wheels, so profile commands ``claude`` and ``codex`` resolve too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Mapping, Sequence, Set
from pathlib import Path

from pairlab.adapters.backends.base import (
    CollectedFiles,
    EpisodeSpec,
    PreparedEpisode,
    RunOutcome,
)
from pairlab.adapters.backends.collection import COLLECTED_ROLES, list_collected
from pairlab.adapters.backends.environment import (
    EpisodePaths,
    build_argv,
    build_env,
    seed_graph_dir,
    seed_home,
    workspace_subdir,
)
from pairlab.adapters.backends.process import pid_alive, run_process
from pairlab.adapters.backends.secret_files import (
    remove_home_files,
    secret_file_names,
    write_home_files,
)
from pairlab.adapters.backends.workspace_repository import prepare_workspace
from pairlab.adapters.clients.registry import bundled_path_dirs
from pairlab.core.errors import ExecutionError, ReasonCode

ROOT_PREFIX = "pairlab-ep-"
OWNER_FILE = "owner.json"


def agent_path(path: str | None, before: Sequence[str] = ()) -> str:
    """PATH for a local episode: ``before`` (a treated arm: an installed pypi
    intervention's command directory, not its environment's ``bin``), this environment's bin directory (the simulator's console
    script lives there), then the real CLIs' bundled directories (``claude``,
    ``codex`` and Codex's ``rg``; see ``clients.registry``), then ``path`` (or the system default)."""
    first = [*before, str(Path(sys.executable).parent), *(str(d) for d in bundled_path_dirs())]
    rest = path or os.defpath
    return os.pathsep.join([*first, *[p for p in rest.split(os.pathsep) if p not in first]])


def default_base_dir() -> Path:
    return Path(tempfile.gettempdir()) / "pairlab-episodes"


def cleanup_local_orphans(base_dir: Path, active_run_ids: Set[str] = frozenset()) -> list[Path]:
    """Remove episode roots whose owning process on this host is gone and whose run is not active."""
    removed: list[Path] = []
    if not base_dir.is_dir():
        return removed
    host = socket.gethostname()
    for root in base_dir.glob(f"{ROOT_PREFIX}*"):
        try:
            owner = json.loads((root / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue  # being created right now, or not ours
        if owner.get("run_id") in active_run_ids or owner.get("keep"):
            continue
        if owner.get("host") == host and pid_alive(owner.get("pid")):
            continue
        shutil.rmtree(root, ignore_errors=True)
        removed.append(root)
    return removed


class LocalBackend:
    name = "local"

    def __init__(
        self,
        *,
        base_dir: Path | None = None,
        host_env: Mapping[str, str] | None = None,
        run_id: str | None = None,
        active_run_ids: Set[str] = frozenset(),
        clean_orphans: bool = True,
        secret_files: Mapping[str, str] | None = None,
    ) -> None:
        self.base_dir = base_dir or default_base_dir()
        # credentials the CLI reads from files in its HOME (``secret_files``): written at
        # prepare, removed when the CLI has ended and never collected
        self.secret_files = dict(secret_files or {})
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.host_env = dict(os.environ if host_env is None else host_env)
        # the run this backend serves is active by definition: never an orphan
        active = {*active_run_ids, *([run_id] if run_id else [])}
        if clean_orphans:
            cleanup_local_orphans(self.base_dir, active)

    def prepare(self, spec: EpisodeSpec) -> PreparedEpisode:
        if not spec.fixture_dir.is_dir():
            raise ExecutionError(
                f"fixture directory {spec.fixture_dir} does not exist", reason=ReasonCode.NOT_FOUND
            )
        sub = workspace_subdir(spec)
        digest = hashlib.sha256(spec.episode_id.encode()).hexdigest()[:10]
        root = Path(tempfile.mkdtemp(prefix=f"{ROOT_PREFIX}{digest}-", dir=self.base_dir))
        try:
            owner = {
                "run_id": spec.run_id,
                "episode_id": spec.episode_id,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "keep": spec.keep_workspace,
            }
            (root / OWNER_FILE).write_text(json.dumps(owner))
            workspace = root / "workspace"
            shutil.copytree(spec.fixture_dir, workspace, symlinks=True)
            prepare_workspace(spec, workspace)
            workdir = workspace / sub
            workdir.mkdir(parents=True, exist_ok=True)
            for role in ("home", "graph", "state"):
                (root / role).mkdir()
            seed_home(spec, root / "home")
            write_home_files(root / "home", self.secret_files)
            seed_graph_dir(spec, root / "graph", workspace, workdir)
            paths = EpisodePaths(
                workspace_root=str(workspace),
                workdir=str(workdir),
                home=str(root / "home"),
                graph=str(root / "graph"),
                state=str(root / "state"),
                solution=str(spec.solution_dir.resolve())
                if spec.profile.mount_solution and spec.solution_dir is not None
                else None,
                account=str(spec.sim_account_dir.resolve()) if spec.sim_account_dir else None,
            )
            if spec.sim_account_dir is not None:
                spec.sim_account_dir.mkdir(parents=True, exist_ok=True)
            env, secrets = build_env(spec, paths, self.host_env, as_root=os.geteuid() == 0)
            before = spec.profile.treatment.path_prepend if spec.is_treated else []
            env["PATH"] = agent_path(env.get("PATH"), before)
            argv = build_argv(spec, paths.workdir)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return PreparedEpisode(
            spec=spec,
            backend=self.name,
            argv=argv,
            env=env,
            secret_names=sorted(secrets) + secret_file_names(self.secret_files),
            workdir=paths.workdir,
            root=root,
            mounts={
                "workspace": paths.workspace_root,
                "home": paths.home,
                "graph": paths.graph,
                "state": paths.state,
            },
        )

    def _secret_env(self, prepared: PreparedEpisode) -> dict[str, str]:
        return {n: self.host_env[n] for n in prepared.secret_names if n in self.host_env}

    def run(self, prepared: PreparedEpisode) -> RunOutcome:
        env = {**prepared.env, **self._secret_env(prepared)}
        try:
            return run_process(
                prepared.argv,
                env=env,
                cwd=Path(prepared.workdir),
                timeout_s=prepared.spec.timeout_s,
            )
        finally:
            remove_home_files(Path(prepared.mounts["home"]), self.secret_files)

    def exec_in_workspace(
        self, prepared: PreparedEpisode, argv: list[str], timeout_s: float
    ) -> RunOutcome:
        """Run a grader command in the workspace: no secrets, no treatment env."""
        env = {
            "PATH": agent_path(self.host_env.get("PATH")),
            "HOME": prepared.mounts["home"],
            "LANG": "C.UTF-8",
            "PAIRLAB_WORKSPACE": prepared.workdir,
            "PAIRLAB_GRAPH_DIR": prepared.mounts["graph"],
            "PAIRLAB_TASK_ID": prepared.spec.task_id,
        }
        return run_process(argv, env=env, cwd=Path(prepared.workdir), timeout_s=timeout_s)

    def collect(self, prepared: PreparedEpisode, dest: Path) -> CollectedFiles:
        root = self._root(prepared)
        dest.mkdir(parents=True, exist_ok=True)
        remove_home_files(root / "home", self.secret_files)
        for role in COLLECTED_ROLES:
            src = root / role
            if src.is_dir():
                shutil.copytree(src, dest / role, symlinks=True, dirs_exist_ok=True)
        return list_collected(dest)

    def cleanup(self, prepared: PreparedEpisode) -> None:
        if prepared.spec.keep_workspace:
            return
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(self._root(prepared))

    def _root(self, prepared: PreparedEpisode) -> Path:
        if prepared.root is None or prepared.backend != self.name:
            raise ExecutionError(
                f"episode {prepared.spec.episode_id} was not prepared by the local backend",
                reason=ReasonCode.EXECUTION_FAILED,
            )
        return prepared.root
