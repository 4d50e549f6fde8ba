"""The Docker backend: one container per episode, four fresh labelled named volumes.

Volumes (``workspace``, ``home``, ``graph``, ``state``) are created per episode,
labelled ``pairlab.managed=true`` / ``pairlab.run_id`` / ``pairlab.episode_id`` /
``pairlab.owner`` (host:pid), and populated from the fixture through the episode
container itself before it starts (``put_archive`` writes into its volumes).
The three roles collected after the run (``home``, ``graph``, ``state``) are
mounted side by side under ``/pairlab/agent`` (``docker_layout``) so that one
``get_archive`` call collects them all: each archive call costs the engine a rootfs mount and a
re-exec (~45 ms here), which made collection the largest per-episode overhead
(bench/README.md, Orchestration).
The agent runs as a non-root user with the profile's CPU/memory/pids limits and
network mode -- or, given ``run_network=``, on the run's own network, where only the
run's host services are reachable (``run_network``); a treated arm of a pypi intervention
gets its command's directory (``/opt/interventions/<id>/path`` in the derived image the
profile names, ``images.intervention_images``) before the image's PATH; the simulator's account dir is bind-mounted read-write and the
task solution read-only when the profile asks for it. Docker SDK errors are
translated at the engine boundary (``pairlab.adapters.docker_engine.call_docker``) into
EnvironmentUnavailable/ExecutionError; leftovers of dead runs go through ``orphans``;
what the agent does (exit code, timeout, OOM) comes back as a RunOutcome.
Secrets (declared secret variables, and ``secret_files`` such as a ChatGPT login's
auth.json) never enter the container's configuration: they reach the CLI through a
private directory mounted for the episode only and a ``/bin/sh`` wrapper
(``secret_files``); ``docker inspect`` shows their mount, never their values. Public
files an episode reads (``read_only_files``: an account's CA bundle) are bind-mounted
read-only at their container path.
"""

from __future__ import annotations

import hashlib
import os
import secrets as random_tokens
import shutil
import time
from collections.abc import Mapping, Set
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions

from pairlab.adapters.backends.archive import pack_dir, unpack_stream
from pairlab.adapters.backends.base import (
    KILL_GRACE_S,
    STREAM_CAP_BYTES,
    CollectedFiles,
    EpisodeSpec,
    PreparedEpisode,
    RunOutcome,
)
from pairlab.adapters.backends.collection import COLLECTED_ROLES, list_collected
from pairlab.adapters.backends.docker_layout import (
    ACCOUNT_MOUNT,
    AGENT_ROOT,
    MOUNT_PATHS,
    MOUNT_ROOT,
    SOLUTION_MOUNT,
    VOLUME_ROLES,
    episode_paths,
    staged_tree,
    workdir_for,
)
from pairlab.adapters.backends.environment import (
    build_argv,
    build_env,
    workspace_subdir,
)
from pairlab.adapters.backends.orphans import cleanup_orphans
from pairlab.adapters.backends.process import StreamCapture
from pairlab.adapters.backends.run_network import RunNetwork
from pairlab.adapters.backends.secret_files import (
    SECRET_MOUNT,
    remove_home_files,
    secret_file_names,
    wrapped_command,
    write_secret_dir,
)
from pairlab.adapters.docker_engine import (
    LABEL_EPISODE,
    LABEL_KEEP,
    LABEL_MANAGED,
    LABEL_OWNER,
    LABEL_RUN,
    call_docker,
    connect,
    owner_label,
    scope_labels,
)
from pairlab.adapters.images.build import ensure_image
from pairlab.adapters.images.engine import inspect
from pairlab.adapters.images.registry import local_tag
from pairlab.core.errors import ExecutionError, ReasonCode
from pairlab.core.schemas.profile import RunnerProfile

DEFAULT_USER = (1000, 1000)
# Host variables never forwarded into a container: the image defines its own PATH.
HOST_ONLY_VARS = frozenset({"PATH"})
# the label that names an episode's host secret directory (removed after its run)
LABEL_SECRETS = "pairlab.secrets_dir"


def _read_log(container: Any, *, stdout: bool) -> tuple[str, bool]:
    """One stream of the container's log, kept up to STREAM_CAP_BYTES (the rest drained)."""
    capture = StreamCapture(STREAM_CAP_BYTES)
    chunks = call_docker(
        "logs", lambda: container.logs(stdout=stdout, stderr=not stdout, stream=True, follow=False)
    )
    for chunk in chunks:
        capture.feed(chunk)
    return capture.text(), capture.truncated


def _image_path(image: str) -> str:
    """The PATH the image's config sets (Debian's default when it sets none)."""
    for entry in (inspect(image) or {}).get("Config", {}).get("Env") or []:
        if entry.startswith("PATH="):
            return str(entry[len("PATH=") :])
    return "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _limits(profile: RunnerProfile) -> dict[str, Any]:
    """The profile's CPU, memory (no swap beyond it) and pids limits, as container options."""
    res = profile.resources
    return {
        "nano_cpus": int(res.cpus * 1e9),
        "mem_limit": f"{res.memory_mb}m",
        "memswap_limit": f"{res.memory_mb}m",
        "pids_limit": res.pids,
    }


def _remove_secret_dir(path: str | None) -> None:
    """Remove an episode's host secret directory (only ever one ``write_secret_dir`` made)."""
    if path and Path(path).name.startswith("pairlab-secrets-"):
        shutil.rmtree(path, ignore_errors=True)


class DockerBackend:
    name = "docker"

    def __init__(
        self,
        *,
        client: Any = None,
        host_env: Mapping[str, str] | None = None,
        user: tuple[int, int] = DEFAULT_USER,
        run_id: str | None = None,
        active_run_ids: Set[str] = frozenset(),
        clean_orphans: bool = True,
        run_network: RunNetwork | None = None,
        secret_files: Mapping[str, str] | None = None,
        read_only_files: Mapping[str, Path] | None = None,
    ) -> None:
        self.client = client if client is not None else connect()
        # public host files each episode reads, bind-mounted read-only at their container
        # path (an account's CA bundle: adapters/accounts/provider_tls)
        self.read_only_files = dict(read_only_files or {})
        # credentials the CLI reads from files in its HOME (secret_files module)
        self.secret_files = dict(secret_files or {})
        self.host_env = dict(os.environ if host_env is None else host_env)
        self.user = user
        # a run network (pairlab.adapters.backends.run_network) replaces the profile's network
        self.run_network = run_network
        # the run this backend serves is active by definition: never an orphan
        active = {*active_run_ids, *([run_id] if run_id else [])}
        if clean_orphans:
            cleanup_orphans(self.client, active)

    # -- prepare ---------------------------------------------------------------

    def _labels(self, spec: EpisodeSpec, role: str) -> dict[str, str]:
        return {
            LABEL_MANAGED: "true",
            LABEL_RUN: spec.run_id,
            LABEL_EPISODE: spec.episode_id,
            LABEL_OWNER: owner_label(),
            LABEL_KEEP: "true" if spec.keep_workspace else "false",
            "pairlab.role": role,
            **scope_labels(),
        }

    def _grant_account_dir(self, account: Path) -> None:
        """The simulated quota lives on the host; the container's user must be able to lock and write it."""
        account.mkdir(parents=True, exist_ok=True)
        if os.geteuid() != 0:
            return
        uid, gid = self.user
        for path in [account, *account.rglob("*")]:
            os.chown(path, uid, gid, follow_symlinks=False)

    def _create_volumes(self, spec: EpisodeSpec, prefix: str, volumes: dict[str, str]) -> None:
        """The four fresh labelled volumes, each recorded in ``volumes`` as soon as it exists
        (so that a failure part-way removes what was made)."""
        for role in VOLUME_ROLES:
            name = f"{prefix}-{role}"
            call_docker(
                f"create volume {name}",
                lambda name=name, role=role: self.client.volumes.create(  # type: ignore[misc]
                    name=name, labels=self._labels(spec, role)
                ),
            )
            volumes[role] = name

    def _mounts(
        self, spec: EpisodeSpec, volumes: Mapping[str, str], solution: Path | None
    ) -> tuple[dict[str, dict[str, str]], dict[str, Any]]:
        """The episode container's binds and network options: its volumes, the solution (ro),
        the simulator's account dir (rw) and the profile's network -- or the run network."""
        binds: dict[str, dict[str, str]] = {
            volumes[role]: {"bind": MOUNT_PATHS[role], "mode": "rw"} for role in VOLUME_ROLES
        }
        if solution is not None:
            binds[str(solution)] = {"bind": SOLUTION_MOUNT, "mode": "ro"}
        if spec.sim_account_dir is not None:
            self._grant_account_dir(spec.sim_account_dir)
            binds[str(spec.sim_account_dir.resolve())] = {"bind": ACCOUNT_MOUNT, "mode": "rw"}
        network: dict[str, Any] = {"network_mode": spec.profile.network}
        if self.run_network is not None:
            network = self.run_network.episode_options()
            binds.update(self.run_network.episode_binds())
        for target, source in self.read_only_files.items():
            binds[str(Path(source).resolve())] = {"bind": target, "mode": "ro"}
        return binds, network

    def _populate(self, container: Any, spec: EpisodeSpec, sub: str) -> None:
        """Write the staged volume roots into the created (not started) container."""
        with staged_tree(spec, sub) as staging:
            archive = pack_dir(staging, uid=self.user[0], gid=self.user[1])
        call_docker("populate volumes", lambda: container.put_archive(MOUNT_ROOT, archive))

    def prepare(self, spec: EpisodeSpec) -> PreparedEpisode:
        if not spec.fixture_dir.is_dir():
            raise ExecutionError(
                f"fixture directory {spec.fixture_dir} does not exist", reason=ReasonCode.NOT_FOUND
            )
        profile = spec.profile
        sub = workspace_subdir(spec)
        # built through the image registry on first use (base image included; progress on
        # stderr), reused afterwards; a build failure is a PairlabError (exit 3)
        image = ensure_image(profile.image)
        call_docker(f"image {image}", lambda: self.client.images.get(image))
        digest = hashlib.sha256(spec.episode_id.encode()).hexdigest()[:10]
        name = f"pairlab-{digest}-{random_tokens.token_hex(3)}"
        workdir = workdir_for(sub)
        solution = (
            spec.solution_dir.resolve()
            if profile.mount_solution and spec.solution_dir is not None
            else None
        )
        env, secret_env = build_env(
            spec,
            episode_paths(spec, workdir, solution),
            self.host_env,
            skip_host=HOST_ONLY_VARS,
            as_root=self.user[0] == 0,
        )
        if spec.is_treated and profile.treatment.path_prepend:
            # a pypi intervention's command (/opt/interventions/<id>/path in the derived image,
            # adapters/images/intervention_images) before the image's PATH; the baseline
            # keeps the image's PATH
            env["PATH"] = ":".join([*profile.treatment.path_prepend, _image_path(image)])
        argv = build_argv(spec, workdir)
        volumes: dict[str, str] = {}
        container: Any = None
        secret_dir: Path | None = None
        command, labels = argv, self._labels(spec, "agent")
        try:
            self._create_volumes(spec, name, volumes)
            binds, network = self._mounts(spec, volumes, solution)
            if secret_env or self.secret_files:
                secret_dir = write_secret_dir(secret_env, self.secret_files, self.user)
                binds[str(secret_dir)] = {"bind": SECRET_MOUNT, "mode": "ro"}
                command = wrapped_command(argv, sorted(secret_env), self.secret_files)
                labels[LABEL_SECRETS] = str(secret_dir)
            container = call_docker(
                "create episode container",
                lambda: self.client.containers.create(
                    image,
                    command,
                    name=name,
                    user=f"{self.user[0]}:{self.user[1]}",
                    working_dir=workdir,
                    environment=env,
                    volumes=binds,
                    **network,
                    **_limits(profile),
                    labels=labels,
                    stdin_open=False,
                    tty=False,
                ),
            )
            self._populate(container, spec, sub)
        except BaseException:
            self._remove(container, volumes)
            _remove_secret_dir(str(secret_dir) if secret_dir else None)
            raise
        return PreparedEpisode(
            spec=spec,
            backend=self.name,
            argv=argv,
            env=env,
            secret_names=sorted(secret_env) + secret_file_names(self.secret_files),
            workdir=workdir,
            volumes=volumes,
            container_id=container.id,
            mounts={role: MOUNT_PATHS[role] for role in VOLUME_ROLES},
        )

    # -- run ---------------------------------------------------------------------

    def _run_container(self, container: Any, timeout_s: float) -> RunOutcome:
        started_at = datetime.now(UTC)
        start_ns = time.monotonic_ns()
        try:
            container.start()
        except docker.errors.APIError as exc:
            return RunOutcome(
                exit_code=None,
                error=f"container did not start: {exc.explanation or exc}",
                started_at=started_at,
                ended_at=datetime.now(UTC),
            )
        timed_out = False
        status: int | None = None
        try:
            status = int(container.wait(timeout=timeout_s)["StatusCode"])
        except requests.exceptions.RequestException:
            timed_out = True  # the wait's read timeout is the episode timeout
        end_ns = time.monotonic_ns()
        ended_at = datetime.now(UTC)
        if timed_out:
            call_docker(
                "stop timed-out container", lambda: container.stop(timeout=int(KILL_GRACE_S))
            )
            call_docker("wait for killed container", lambda: container.wait(timeout=60))
        state = call_docker(
            "inspect container", lambda: (container.reload(), container.attrs["State"])[1]
        )
        oom = bool(state.get("OOMKilled"))
        stdout, out_cut = _read_log(container, stdout=True)
        stderr, err_cut = _read_log(container, stdout=False)
        return RunOutcome(
            exit_code=None if timed_out else status,
            timed_out=timed_out,
            oom_killed=oom,
            crashed=not timed_out and status != 0,
            latency_ms=(end_ns - start_ns) / 1e6,
            started_at=started_at,
            ended_at=ended_at,
            stdout=stdout,
            stderr=stderr,
            stdout_truncated=out_cut,
            stderr_truncated=err_cut,
        )

    def _container(self, prepared: PreparedEpisode) -> Any:
        if prepared.backend != self.name or prepared.container_id is None:
            raise ExecutionError(
                f"episode {prepared.spec.episode_id} was not prepared by the docker backend",
                reason=ReasonCode.EXECUTION_FAILED,
            )
        cid = prepared.container_id
        return call_docker("find episode container", lambda: self.client.containers.get(cid))

    def run(self, prepared: PreparedEpisode) -> RunOutcome:
        container = self._container(prepared)
        try:
            outcome = self._run_container(container, prepared.spec.timeout_s)
        finally:  # the CLI has read its secrets: their host copy goes now
            _remove_secret_dir(container.labels.get(LABEL_SECRETS))
        killed = outcome.timed_out or outcome.oom_killed or (outcome.exit_code or 0) >= 128
        if self.secret_files and (killed or outcome.exit_code is None):
            self._scrub_home(prepared)
        return outcome

    def _scrub_home(self, prepared: PreparedEpisode) -> None:
        """Remove the secret files from the home volume when the wrapper could not (the
        episode was killed): a kept volume must not hold them either."""
        spec = prepared.spec
        targets = [f"{MOUNT_PATHS['home']}/{rel}" for rel in self.secret_files]
        scrub = call_docker(
            "create scrub container",
            lambda: self.client.containers.create(
                local_tag(spec.profile.image),  # as built (PAIRLAB_IMAGE_PREFIX), as prepare's
                ["rm", "-f", *targets],
                user=f"{self.user[0]}:{self.user[1]}",
                volumes={prepared.volumes["home"]: {"bind": MOUNT_PATHS["home"], "mode": "rw"}},
                network_mode="none",
                labels=self._labels(spec, "scrub"),
            ),
        )
        try:
            self._run_container(scrub, 60)
        finally:
            self._remove(scrub, {})

    def exec_in_workspace(
        self, prepared: PreparedEpisode, argv: list[str], timeout_s: float
    ) -> RunOutcome:
        """A short-lived grader container: workspace rw, graph ro, no network, no secrets."""
        spec = prepared.spec
        try:
            container = call_docker(
                "create grader container",
                lambda: self.client.containers.create(
                    local_tag(spec.profile.image),  # as built (PAIRLAB_IMAGE_PREFIX)
                    argv,
                    user=f"{self.user[0]}:{self.user[1]}",
                    working_dir=prepared.workdir,
                    environment={
                        "HOME": "/tmp",
                        "LANG": "C.UTF-8",
                        "PAIRLAB_WORKSPACE": prepared.workdir,
                        "PAIRLAB_GRAPH_DIR": MOUNT_PATHS["graph"],
                        "PAIRLAB_TASK_ID": spec.task_id,
                    },
                    volumes={
                        prepared.volumes["workspace"]: {
                            "bind": MOUNT_PATHS["workspace"],
                            "mode": "rw",
                        },
                        prepared.volumes["graph"]: {"bind": MOUNT_PATHS["graph"], "mode": "ro"},
                    },
                    network_mode="none",
                    **_limits(spec.profile),
                    labels=self._labels(spec, "grader"),
                ),
            )
        except ExecutionError as exc:
            return RunOutcome(exit_code=None, error=exc.message)
        try:
            return self._run_container(container, timeout_s)
        finally:
            self._remove(container, {})

    # -- collect / cleanup -----------------------------------------------------------

    def collect(self, prepared: PreparedEpisode, dest: Path) -> CollectedFiles:
        container = self._container(prepared)
        dest.mkdir(parents=True, exist_ok=True)
        # One archive of the agent root holds every collected role ("agent/home/..."); anything
        # else the agent may have written into that directory itself is not collected.
        chunks, _stat = call_docker("collect", lambda: container.get_archive(AGENT_ROOT))
        unpack_stream(chunks, dest, strip_components=1, include=COLLECTED_ROLES)
        # archiving a stopped container makes its bind sources anew (empty): not kept
        _remove_secret_dir(container.labels.get(LABEL_SECRETS))
        # the wrapper removed them; a CLI killed before it could is no reason to keep them
        remove_home_files(dest / "home", self.secret_files)
        return list_collected(dest)

    def _remove(self, container: Any, volumes: Mapping[str, str]) -> None:
        if container is not None:
            _remove_secret_dir(container.labels.get(LABEL_SECRETS))
            try:
                container.remove(force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.DockerException as exc:
                raise ExecutionError(f"could not remove container {container.name}: {exc}") from exc
        for name in volumes.values():
            try:
                self.client.api.remove_volume(name, force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.DockerException as exc:
                raise ExecutionError(f"could not remove volume {name}: {exc}") from exc

    def cleanup(self, prepared: PreparedEpisode) -> None:
        if prepared.spec.keep_workspace:
            return
        container = None
        if prepared.container_id is not None:
            try:
                container = self.client.containers.get(prepared.container_id)
            except docker.errors.NotFound:
                container = None
            except docker.errors.DockerException as exc:
                raise ExecutionError(f"cleanup: {exc}") from exc
        self._remove(container, prepared.volumes)
