"""A per-run Docker network on which episode containers reach the run's host services and
nothing else.

The network is a user-defined bridge created ``internal`` with
``com.docker.network.bridge.inhibit_ipv4``: Docker routes nothing out of it and gives
the host no address on it. Measured here, both are needed -- on a plain internal
network a container still reaches every port the host listens on through the
network's gateway (and so other runs' emulators, Prefect, ...). On this network a
container reaches no host port, no internet, no DNS name outside the network and no
container of another network (tests/integration/test_run_network.py).

The network's only other member is the run's relay container: for each
:class:`HostService` it listens on ``listen_port`` and passes every connection through
a Unix socket, bind-mounted from a private host directory, to a forwarder thread in
this process that connects to the service's own address
(pairlab/adapters/backends/relay.py). So the emulator can stay bound to 127.0.0.1 on
the host; episodes use ``http://<alias>:<listen_port>``.

Names: an episode container gets the aliases in its ``/etc/hosts`` (pointing at the
relay) and a ``resolv.conf`` whose only nameserver is its own loopback, where nothing
listens -- any other lookup fails at once. (Docker's embedded DNS on an internal
network answers nothing outside it: each lookup of an outside name took 10 s to fail
here, and the CLIs look some up.) Episodes therefore cannot resolve other containers'
names either. :meth:`RunNetwork.episode_options` and :meth:`RunNetwork.episode_binds`
are what ``DockerBackend(run_network=...)`` adds to each episode container.

Everything is labelled like the backend's volumes (``pairlab.managed``,
``pairlab.run_id``, ``pairlab.owner``; role ``network`` / ``relay``) and removed by
:meth:`RunNetwork.close`; :func:`pairlab.adapters.backends.orphans.cleanup_orphans`
removes what a dead process left behind, never another live run's network. Needs the
Docker daemon on this host (a bind-mounted Unix socket cannot cross into a VM).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import docker.errors

from pairlab.adapters.backends import relay
from pairlab.adapters.docker_engine import (
    LABEL_MANAGED,
    LABEL_OWNER,
    LABEL_RUN,
    LABEL_SOCKET_DIR,
    call_docker,
    owner_label,
    remove_network,
    scope_labels,
)
from pairlab.core.errors import (
    EnvironmentUnavailable,
    ExecutionError,
    InvalidInputError,
    ReasonCode,
)

SOCKET_MOUNT: Final = "/pairlab/services"
RELAY_USER: Final = "1000:1000"
RELAY_READY_TIMEOUT_S: Final = 30.0
RESOLV_CONF: Final = "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"
# a lowercase DNS name: a label ("emulator"), or a provider's host name ("api.anthropic.com")
_ALIAS: Final = re.compile(r"^[a-z][a-z0-9-]{0,62}(\.[a-z0-9][a-z0-9-]{0,62})*$")


@dataclass(frozen=True)
class HostService:
    """A service on the host that episodes reach as ``http://<alias>:<listen_port>``."""

    alias: str  # DNS name on the run network, e.g. "emulator" (or a provider's host name)
    port: int  # where the service listens on the host
    host: str = "127.0.0.1"
    listen_port: int = 8080

    def __post_init__(self) -> None:
        if not _ALIAS.fullmatch(self.alias):
            raise InvalidInputError(
                f"service alias {self.alias!r} must be a lowercase DNS name",
                reason=ReasonCode.INVALID_INPUT,
            )
        for name, value in (("port", self.port), ("listen_port", self.listen_port)):
            if not 0 < value < 65536:
                raise InvalidInputError(f"{name} {value} is not a TCP port")


class RunNetwork:
    """An open run network; use as a context manager or call :meth:`close`."""

    def __init__(
        self,
        client: Any,
        name: str,
        run_id: str,
        services: tuple[HostService, ...],
        socket_dir: Path,
    ) -> None:
        self.client = client
        self.name = name
        self.run_id = run_id
        self.services = services
        self._socket_dir = socket_dir
        self._forwarders: list[relay.UnixToTcpForwarder] = []
        self.relay_container: Any = None
        self.network: Any = None
        self.relay_address: str | None = None

    def episode_options(self) -> dict[str, Any]:
        """``containers.create`` keywords that put an episode container on this network."""
        if self.relay_address is None:
            raise ExecutionError(f"run network {self.name} is closed")
        return {
            "network_mode": self.name,
            "extra_hosts": {service.alias: self.relay_address for service in self.services},
        }

    def episode_binds(self) -> dict[str, dict[str, str]]:
        """The bind mount that makes every lookup of an outside name fail at once."""
        return {str(self._socket_dir / "resolv.conf"): {"bind": "/etc/resolv.conf", "mode": "ro"}}

    def url(self, alias: str, path: str = "") -> str:
        """``http://<alias>:<port><path>`` as an episode container reaches the service."""
        for service in self.services:
            if service.alias == alias:
                return f"http://{alias}:{service.listen_port}{path}"
        raise InvalidInputError(f"no service {alias!r} on run network {self.name}")

    def relay_failure(self) -> str | None:
        """The last connection to a host service that this process could not make (e.g.
        the provider's port closed), in the forwarder's words; None: none failed."""
        failures = [f.last_failure for f in self._forwarders if f.last_failure is not None]
        return "; ".join(failures) or None

    def __enter__(self) -> RunNetwork:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Remove the relay and the network, stop the forwarders; idempotent."""
        if self.relay_container is not None:
            with contextlib.suppress(docker.errors.NotFound):
                self.relay_container.remove(force=True)
            self.relay_container = None
        if self.network is not None:
            try:
                remove_network(self.network)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                raise ExecutionError(
                    f"could not remove run network {self.name}: {exc.explanation}"
                ) from exc
            self.network = None
        self.relay_address = None
        for forwarder in self._forwarders:
            forwarder.close()
        self._forwarders.clear()
        shutil.rmtree(self._socket_dir, ignore_errors=True)


def _labels(run_id: str, role: str) -> dict[str, str]:
    return {
        LABEL_MANAGED: "true",
        LABEL_RUN: run_id,
        LABEL_OWNER: owner_label(),
        "pairlab.role": role,
        **scope_labels(),
    }


def _relay_source() -> str:
    return Path(relay.__file__).read_text(encoding="utf-8")


def _wait_ready(container: Any, name: str) -> None:
    deadline = time.monotonic() + RELAY_READY_TIMEOUT_S
    while time.monotonic() < deadline:
        container.reload()
        logs = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
        if "relay: ready" in logs:
            return
        if container.status in ("exited", "dead"):
            raise ExecutionError(f"relay of {name} exited: {logs[-2000:]}")
        time.sleep(0.05)
    raise EnvironmentUnavailable(
        f"relay of {name} not ready after {RELAY_READY_TIMEOUT_S:.0f} s",
        reason=ReasonCode.DOCKER_UNAVAILABLE,
    )


def open_run_network(
    client: Any, run_id: str, services: list[HostService], *, image: str
) -> RunNetwork:
    """Create the run's network and relay (``image`` must have python3, e.g. the episode
    image); episode containers join it through ``DockerBackend(run_network=net)``."""
    if not services:
        raise InvalidInputError("a run network needs at least one host service")
    if len({s.alias for s in services}) != len(services) or len(
        {s.listen_port for s in services}
    ) != len(services):
        raise InvalidInputError("run network services need distinct aliases and listen ports")
    digest = hashlib.sha256(run_id.encode()).hexdigest()[:10]
    name = f"pairlab-net-{digest}-{secrets.token_hex(3)}"
    socket_dir = Path(tempfile.mkdtemp(prefix="pairlab-net-"))
    socket_dir.chmod(0o755)
    net = RunNetwork(client, name, run_id, tuple(services), socket_dir)
    try:
        net.network = call_docker(
            f"create network {name}",
            lambda: client.networks.create(
                name,
                driver="bridge",
                internal=True,
                options={"com.docker.network.bridge.inhibit_ipv4": "true"},
                labels={**_labels(run_id, "network"), LABEL_SOCKET_DIR: str(socket_dir)},
            ),
        )
        specs = []
        for service in services:
            path = socket_dir / f"{service.alias}.sock"
            net._forwarders.append(relay.UnixToTcpForwarder(str(path), service.host, service.port))
            specs.append(f"{service.listen_port}={SOCKET_MOUNT}/{path.name}")
        endpoint = client.api.create_endpoint_config(aliases=[s.alias for s in services])
        net.relay_container = call_docker(
            f"create relay of {name}",
            lambda: client.containers.create(
                image,
                ["python3", "-c", _relay_source(), *specs],
                name=f"{name}-relay",
                user=RELAY_USER,
                network=name,
                networking_config={name: endpoint},
                volumes={str(socket_dir): {"bind": SOCKET_MOUNT, "mode": "rw"}},
                read_only=True,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                mem_limit="64m",
                pids_limit=64,
                labels=_labels(run_id, "relay"),
            ),
        )
        call_docker(f"start relay of {name}", net.relay_container.start)
        _wait_ready(net.relay_container, name)
        net.relay_address = net.relay_container.attrs["NetworkSettings"]["Networks"][name][
            "IPAddress"
        ]
        (socket_dir / "resolv.conf").write_text(RESOLV_CONF, encoding="utf-8")
        (socket_dir / "resolv.conf").chmod(0o644)
    except BaseException:
        net.close()
        raise
    return net
