"""The Docker backend: one container per episode, four fresh labelled named volumes.

Volumes (``workspace``, ``home``, ``graph``, ``state``) are created per episode,
labelled ``pairlab.managed=true`` / ``pairlab.run_id`` / ``pairlab.episode_id`` /
``pairlab.owner`` (host:pid), and populated from the fixture through the episode
container itself before it starts (``put_archive`` writes into its volumes).
The three roles collected after the run (``home``, ``graph``, ``state``) are
mounted side by side under ``/pairlab/agent`` so that one ``get_archive`` call
collects them all: each archive call costs the engine a rootfs mount and a
re-exec (~45 ms here), which made collection the largest per-episode overhead
(bench/README.md, Orchestration).
The agent runs as a non-root user with the profile's CPU/memory/pids limits and
network mode -- or, given ``run_network=``, on the run's own network, where only the
run's host services are reachable (``run_network``); the simulator's account dir is bind-mounted read-write and the
task solution read-only when the profile asks for it. Docker SDK errors are
translated here, at the boundary, into EnvironmentUnavailable/ExecutionError;
what the agent does (exit code, timeout, OOM) comes back as a RunOutcome.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets as random_tokens
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Set
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

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
from pairlab.adapters.backends.environment import (
    EpisodePaths,
    build_argv,
    build_env,
    seed_graph_dir,
    seed_home,
    workspace_subdir,
)
from pairlab.adapters.backends.process import StreamCapture, pid_alive
from pairlab.core.errors import EnvironmentUnavailable, ExecutionError, ReasonCode

if TYPE_CHECKING:
    from pairlab.adapters.backends.run_network import RunNetwork

MOUNT_ROOT = "/pairlab"
AGENT_ROOT = f"{MOUNT_ROOT}/agent"  # parent of the collected roles' mounts
VOLUME_ROLES = ("workspace", "home", "graph", "state")
MOUNT_PATHS = {
    "workspace": f"{MOUNT_ROOT}/workspace",
    **{role: f"{AGENT_ROOT}/{role}" for role in COLLECTED_ROLES},
}
SOLUTION_MOUNT = f"{MOUNT_ROOT}/solution"
ACCOUNT_MOUNT = f"{MOUNT_ROOT}/account"
DEFAULT_USER = (1000, 1000)
LABEL_MANAGED = "pairlab.managed"
LABEL_RUN = "pairlab.run_id"
LABEL_EPISODE = "pairlab.episode_id"
LABEL_OWNER = "pairlab.owner"
LABEL_KEEP = "pairlab.keep"
LABEL_SOCKET_DIR = "pairlab.socket_dir"  # a run network's host directory of relay sockets
# Resources are labelled with PAIRLAB_DOCKER_SCOPE when it is set (e.g. one per pytest-xdist
# worker); orphan cleanup only touches resources of its own scope (unset = unlabelled ones).
LABEL_SCOPE = "pairlab.scope"
SCOPE_ENV = "PAIRLAB_DOCKER_SCOPE"
# Host variables never forwarded into a container: the image defines its own PATH.
HOST_ONLY_VARS = frozenset({"PATH"})

T = TypeVar("T")


def connect() -> Any:
    """``docker.from_env()`` with the failure translated (exit 3, docker-unavailable)."""
    try:
        client = docker.from_env()
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise EnvironmentUnavailable(
            f"Docker engine not reachable: {exc}", reason=ReasonCode.DOCKER_UNAVAILABLE
        ) from exc
    return client


def docker_available() -> bool:
    try:
        connect().close()
    except EnvironmentUnavailable:
        return False
    return True


def image_present(image: str, client: Any = None) -> str | None:
    """The local image id of ``image``, or None when it is not present (no pulls: no registry)."""
    docker_client = client if client is not None else connect()
    try:
        return str(docker_client.images.get(image).id)
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.DockerException as exc:
        raise ExecutionError(f"image {image}: {exc}") from exc


def call_docker(what: str, fn: Callable[[], T]) -> T:
    try:
        return fn()
    except docker.errors.ImageNotFound as exc:
        raise ExecutionError(
            f"{what}: image not found ({exc.explanation}); build it with `pairlab images build`",
            reason=ReasonCode.NOT_FOUND,
        ) from exc
    except requests.exceptions.ConnectionError as exc:
        raise EnvironmentUnavailable(
            f"{what}: Docker engine not reachable: {exc}", reason=ReasonCode.DOCKER_UNAVAILABLE
        ) from exc
    except docker.errors.DockerException as exc:
        raise ExecutionError(f"{what}: {exc}", reason=ReasonCode.EXECUTION_FAILED) from exc


def ensure_episode_image(image: str) -> str:
    """The local image to run for a profile's ``image``: built through the image registry
    on first use (``pairlab.adapters.images``: base image included; progress on stderr),
    reused afterwards. Build failures are PairlabErrors (a missing prerequisite: exit 3)."""
    from pairlab.adapters.images import ensure_image

    return ensure_image(image)


def owner_label() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def scope_labels() -> dict[str, str]:
    """The ``pairlab.scope`` label of this process's resources ({} when PAIRLAB_DOCKER_SCOPE
    is unset): orphan cleanup never removes another scope's resources."""
    scope = os.environ.get(SCOPE_ENV, "")
    return {LABEL_SCOPE: scope} if scope else {}


def _owner_alive(owner: str | None) -> bool:
    if not owner or ":" not in owner:
        return False
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname():
        return True  # another machine's worker: not ours to judge
    return pid_alive(pid)


def cleanup_orphans(client: Any, active_run_ids: Set[str] = frozenset()) -> dict[str, list[str]]:
    """Remove pairlab-managed containers, volumes and run networks whose run is not active.

    A resource is an orphan when it belongs to this process's scope (``scope_labels``),
    its run is not in ``active_run_ids``, it is not marked keep, and the process that
    created it (on this host) is gone.
    """
    removed: dict[str, list[str]] = {"containers": [], "volumes": [], "networks": []}
    scope = scope_labels().get(LABEL_SCOPE, "")

    def orphan(labels: Mapping[str, str]) -> bool:
        return (
            labels.get(LABEL_SCOPE, "") == scope
            and labels.get(LABEL_RUN) not in active_run_ids
            and labels.get(LABEL_KEEP) != "true"
            and not _owner_alive(labels.get(LABEL_OWNER))
        )

    containers = call_docker(
        "list containers",
        # ignore_removed: another process's container may be removed between list and inspect
        lambda: client.containers.list(
            all=True, filters={"label": f"{LABEL_MANAGED}=true"}, ignore_removed=True
        ),
    )
    for container in containers:
        if orphan(container.labels):
            try:
                container.remove(force=True)
                removed["containers"].append(container.name)
            except docker.errors.NotFound:
                pass
    volumes = call_docker(
        "list volumes", lambda: client.volumes.list(filters={"label": f"{LABEL_MANAGED}=true"})
    )
    for volume in volumes:
        if orphan(volume.attrs.get("Labels") or {}):
            try:
                volume.remove(force=True)
                removed["volumes"].append(volume.name)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError:
                pass  # still in use by a container another process is removing
    networks = call_docker(
        "list networks", lambda: client.networks.list(filters={"label": f"{LABEL_MANAGED}=true"})
    )
    for network in networks:
        labels = network.attrs.get("Labels") or {}
        if orphan(labels):
            try:
                remove_network(network)
                removed["networks"].append(network.name)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError:
                continue  # a container of it is still being removed
            _remove_socket_dir(labels)
    return removed


def _remove_socket_dir(labels: Mapping[str, str]) -> None:
    """A dead run network's host directory of relay sockets, when it is on this host."""
    owner, path = labels.get(LABEL_OWNER) or "", labels.get(LABEL_SOCKET_DIR)
    if not path or owner.rpartition(":")[0] != socket.gethostname():
        return
    directory = Path(path)
    if directory.parent == Path(tempfile.gettempdir()) and directory.name.startswith(
        "pairlab-net-"
    ):
        shutil.rmtree(directory, ignore_errors=True)


def remove_network(network: Any) -> None:
    """Remove a pairlab run network, first detaching what is still attached to it (episode
    containers kept for inspection stay, without the network)."""
    network.reload()
    for container in network.containers:
        with contextlib.suppress(docker.errors.NotFound):
            network.disconnect(container, force=True)
    network.remove()


def _read_log(container: Any, *, stdout: bool) -> tuple[str, bool]:
    """One stream of the container's log, kept up to STREAM_CAP_BYTES (the rest drained)."""
    capture = StreamCapture(STREAM_CAP_BYTES)
    chunks = call_docker(
        "logs", lambda: container.logs(stdout=stdout, stderr=not stdout, stream=True, follow=False)
    )
    for chunk in chunks:
        capture.feed(chunk)
    return capture.text(), capture.truncated


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
    ) -> None:
        self.client = client if client is not None else connect()
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

    @contextmanager
    def _staged_tree(self, spec: EpisodeSpec, sub: str) -> Iterator[Path]:
        """The four volume roots laid out on the host, to be packed into the container."""
        staging = Path(tempfile.mkdtemp(prefix="pairlab-stage-"))
        try:
            shutil.copytree(spec.fixture_dir, staging / "workspace", symlinks=True)
            (staging / "workspace" / sub).mkdir(parents=True, exist_ok=True)
            agent = staging / Path(AGENT_ROOT).relative_to(MOUNT_ROOT)
            for role in COLLECTED_ROLES:
                (agent / role).mkdir(parents=True)
            seed_home(spec, agent / "home")
            seed_graph_dir(
                spec, agent / "graph", staging / "workspace", staging / "workspace" / sub
            )
            yield staging
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _grant_account_dir(self, account: Path) -> None:
        """The simulated quota lives on the host; the container's user must be able to lock and write it."""
        account.mkdir(parents=True, exist_ok=True)
        if os.geteuid() != 0:
            return
        uid, gid = self.user
        for path in [account, *account.rglob("*")]:
            os.chown(path, uid, gid, follow_symlinks=False)

    def prepare(self, spec: EpisodeSpec) -> PreparedEpisode:
        if not spec.fixture_dir.is_dir():
            raise ExecutionError(
                f"fixture directory {spec.fixture_dir} does not exist", reason=ReasonCode.NOT_FOUND
            )
        profile = spec.profile
        sub = workspace_subdir(spec)
        image = ensure_episode_image(profile.image)
        call_docker(f"image {image}", lambda: self.client.images.get(image))
        digest = hashlib.sha256(spec.episode_id.encode()).hexdigest()[:10]
        token = random_tokens.token_hex(3)
        workdir = f"{MOUNT_ROOT}/workspace" if sub == "." else f"{MOUNT_ROOT}/workspace/{sub}"
        solution = (
            spec.solution_dir.resolve()
            if profile.mount_solution and spec.solution_dir is not None
            else None
        )
        paths = EpisodePaths(
            workspace_root=MOUNT_PATHS["workspace"],
            workdir=workdir,
            home=MOUNT_PATHS["home"],
            graph=MOUNT_PATHS["graph"],
            state=MOUNT_PATHS["state"],
            solution=SOLUTION_MOUNT if solution is not None else None,
            account=ACCOUNT_MOUNT if spec.sim_account_dir is not None else None,
        )
        env, secret_env = build_env(
            spec, paths, self.host_env, skip_host=HOST_ONLY_VARS, as_root=self.user[0] == 0
        )
        argv = build_argv(spec, workdir)
        volumes: dict[str, str] = {}
        container: Any = None
        try:
            for role in VOLUME_ROLES:
                name = f"pairlab-{digest}-{token}-{role}"
                call_docker(
                    f"create volume {name}",
                    lambda name=name, role=role: self.client.volumes.create(  # type: ignore[misc]
                        name=name, labels=self._labels(spec, role)
                    ),
                )
                volumes[role] = name
            binds: dict[str, dict[str, str]] = {
                volumes[role]: {"bind": MOUNT_PATHS[role], "mode": "rw"} for role in VOLUME_ROLES
            }
            if solution is not None:
                binds[str(solution)] = {"bind": SOLUTION_MOUNT, "mode": "ro"}
            if spec.sim_account_dir is not None:
                self._grant_account_dir(spec.sim_account_dir)
                binds[str(spec.sim_account_dir.resolve())] = {"bind": ACCOUNT_MOUNT, "mode": "rw"}
            network: dict[str, Any] = {"network_mode": profile.network}
            if self.run_network is not None:
                network = self.run_network.episode_options()
                binds.update(self.run_network.episode_binds())
            res = profile.resources
            container = call_docker(
                "create episode container",
                lambda: self.client.containers.create(
                    image,
                    argv,
                    name=f"pairlab-{digest}-{token}",
                    user=f"{self.user[0]}:{self.user[1]}",
                    working_dir=workdir,
                    environment={**env, **secret_env},
                    volumes=binds,
                    **network,
                    nano_cpus=int(res.cpus * 1e9),
                    mem_limit=f"{res.memory_mb}m",
                    memswap_limit=f"{res.memory_mb}m",
                    pids_limit=res.pids,
                    labels=self._labels(spec, "agent"),
                    stdin_open=False,
                    tty=False,
                ),
            )
            with self._staged_tree(spec, sub) as staging:
                archive = pack_dir(staging, uid=self.user[0], gid=self.user[1])
            call_docker("populate volumes", lambda: container.put_archive(MOUNT_ROOT, archive))
        except BaseException:
            self._remove(container, volumes)
            raise
        return PreparedEpisode(
            spec=spec,
            backend=self.name,
            argv=argv,
            env=env,
            secret_names=sorted(secret_env),
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
        return self._run_container(self._container(prepared), prepared.spec.timeout_s)

    def exec_in_workspace(
        self, prepared: PreparedEpisode, argv: list[str], timeout_s: float
    ) -> RunOutcome:
        """A short-lived grader container: workspace rw, graph ro, no network, no secrets."""
        spec = prepared.spec
        res = spec.profile.resources
        try:
            container = call_docker(
                "create grader container",
                lambda: self.client.containers.create(
                    spec.profile.image,
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
                    nano_cpus=int(res.cpus * 1e9),
                    mem_limit=f"{res.memory_mb}m",
                    memswap_limit=f"{res.memory_mb}m",
                    pids_limit=res.pids,
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
        return list_collected(dest)

    def _remove(self, container: Any, volumes: Mapping[str, str]) -> None:
        if container is not None:
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
