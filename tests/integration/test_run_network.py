"""The Docker backend's per-run network: the run's host service is reachable from an episode
container, nothing else is -- proven with real containers, a real host service and a control.

A tiny HTTP server bound to the host's 127.0.0.1 stands in for the emulator. The episode
runs through the real DockerBackend with ``network=<run network>`` and probes: the service
(GET, a 256 KB echo, a stream delivered chunk by chunk), then everything that must fail --
another host service listening on every interface, the service's own host port, the host's
addresses, another run's relay, a public address, DNS. The same probe on Docker's default
bridge reaches the other host service: the probe can see a leak. (This machine's egress
accepts a TCP connection to any outside address, so a raw connect that succeeds anywhere
means a route out exists: the isolated probe's connects are strict.)
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pairlab.adapters.backends import EpisodeSpec
from pairlab.adapters.backends.docker import DockerBackend
from pairlab.adapters.backends.orphans import cleanup_orphans
from pairlab.adapters.backends.run_network import HostService, RunNetwork, open_run_network
from tests.integration.backend_fixtures import docker_client_or_skip, shell_profile, simclient_image

pytestmark = pytest.mark.docker
__all__ = ["simclient_image"]  # the session fixture, re-exported for pytest

PROBE = textwrap.dedent(
    """
    import json, os, socket, time, urllib.request

    def get(url, data=None):
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=5) as r:
                return r.read().decode()
        except Exception as exc:
            return "ERROR " + type(exc).__name__

    def connects(host, port):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect((host, int(port)))
            return True
        except Exception:
            return False
        finally:
            s.close()

    def resolves(name):
        try:
            socket.getaddrinfo(name, 80)
            return True
        except Exception:
            return False

    out = {"service": get(os.environ["SERVICE_URL"] + "/e/tok-1")}
    payload = os.urandom(128 * 1024).hex().encode()
    out["echo_ok"] = get(os.environ["SERVICE_URL"] + "/echo", payload) == payload.decode()
    started = time.monotonic()
    try:
        with urllib.request.urlopen(os.environ["SERVICE_URL"] + "/stream", timeout=10) as r:
            first = r.readline()
            out["first_chunk_s"] = time.monotonic() - started
            out["stream"] = (first + r.read()).decode()
    except Exception as exc:
        out["stream"] = "ERROR " + type(exc).__name__
    leaks = {}
    for host in os.environ["HOST_ADDRESSES"].split(","):
        for port in (os.environ["OTHER_PORT"], os.environ["SERVICE_HOST_PORT"]):
            leaks[f"{host}:{port}"] = connects(host, port)
    leaks["other-run-relay"] = connects(os.environ["OTHER_RELAY_IP"], 8080)
    leaks["public"] = connects(os.environ["PUBLIC_IP"], 443)
    started = time.monotonic()
    leaks["dns-public"] = resolves("pypi.org")
    out["dns_fail_s"] = time.monotonic() - started
    leaks["dns-other-relay"] = resolves(os.environ["OTHER_RELAY_NAME"])
    out["leaks"] = leaks
    print(json.dumps(out))
    """
)


class _Handler(BaseHTTPRequestHandler):
    nonce = ""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/stream":
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for i in range(3):
                self.wfile.write(f"data: {i}\n".encode())
                self.wfile.flush()
                time.sleep(0.6)
            return
        body = f"{self.nonce} {self.path}".encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _serve(host: str, nonce: str) -> ThreadingHTTPServer:
    handler = type("Handler", (_Handler,), {"nonce": nonce})
    server = ThreadingHTTPServer((host, 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def services() -> Iterator[dict[str, ThreadingHTTPServer]]:
    servers = {
        "emulator": _serve("127.0.0.1", "emulator-A"),  # loopback only, like the emulator
        "other-run": _serve("127.0.0.1", "emulator-B"),
        "elsewhere": _serve("0.0.0.0", "not-for-episodes"),  # reachable from Docker's bridge
    }
    yield servers
    for server in servers.values():
        server.shutdown()
        server.server_close()


def _gateway(client: Any, network: str) -> str:
    """The network's gateway address (the default bridge lists only its subnet)."""
    config = client.networks.get(network).attrs["IPAM"]["Config"][0]
    if "Gateway" in config:
        return str(config["Gateway"])
    return str(next(ipaddress.ip_network(config["Subnet"]).hosts()))


def _primary_address() -> str:
    """The host's address on its default route (a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))
        return str(probe.getsockname()[0])


def _host_addresses(client: Any, net: RunNetwork) -> list[str]:
    """Every address of the host an episode could try: Docker's bridge gateway, the run
    network's nominal gateway, the default-route address and the hostname's addresses."""
    bridge = _gateway(client, "bridge")
    own = _gateway(client, net.name)
    named = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
    return sorted({bridge, own, _primary_address(), *named} - {"127.0.0.1"})


def _public_ip() -> str:
    try:
        return socket.gethostbyname("pypi.org")
    except OSError:
        return "1.1.1.1"


def _probe(
    client: Any, image: str, tmp_path: Path, network: RunNetwork | None, env: dict[str, str]
) -> dict[str, Any]:
    fixture = tmp_path / f"fixture-{network.name if network else 'bridge'}"
    fixture.mkdir()
    (fixture / "probe.py").write_text(PROBE)
    profile = shell_profile(image=image).model_copy(update={"network": "bridge"})
    spec = EpisodeSpec(
        run_id="run-net-a",
        episode_id="run-net-a:probe:0:baseline",
        pair_id="run-net-a:probe:0",
        task_id="probe",
        arm="baseline",
        prompt="python3 probe.py",
        profile=profile,
        fixture_dir=fixture,
        timeout_s=120,
        extra_env=env,
    )
    backend = DockerBackend(client=client, run_id="run-net-a", run_network=network, host_env={})
    prepared = backend.prepare(spec)
    try:
        container = client.containers.get(prepared.container_id)
        assert container.attrs["HostConfig"]["NetworkMode"] == (
            network.name if network else "bridge"
        )
        outcome = backend.run(prepared)
    finally:
        backend.cleanup(prepared)
    assert outcome.exit_code == 0, outcome.stderr
    result: dict[str, Any] = json.loads(outcome.stdout.strip().splitlines()[-1])
    return result


def test_only_the_run_service_is_reachable(
    simclient_image: str, services: dict[str, ThreadingHTTPServer], tmp_path: Path
) -> None:
    client = docker_client_or_skip()
    emulator = services["emulator"].server_address[1]
    with (
        open_run_network(
            client, "run-net-a", [HostService("emulator", emulator)], image=simclient_image
        ) as net_a,
        open_run_network(
            client,
            "run-net-b",
            [HostService("emulator", services["other-run"].server_address[1])],
            image=simclient_image,
        ) as net_b,
    ):
        relay_b = net_b.relay_container
        relay_b.reload()
        env = {
            "SERVICE_URL": net_a.url("emulator"),
            "SERVICE_HOST_PORT": str(emulator),
            "OTHER_PORT": str(services["elsewhere"].server_address[1]),
            "HOST_ADDRESSES": ",".join(_host_addresses(client, net_a)),
            "OTHER_RELAY_IP": relay_b.attrs["NetworkSettings"]["Networks"][net_b.name]["IPAddress"],
            "OTHER_RELAY_NAME": relay_b.name,
            "PUBLIC_IP": _public_ip(),
        }
        isolated = _probe(client, simclient_image, tmp_path, net_a, env)
        control = _probe(client, simclient_image, tmp_path, None, env)
    assert isolated["service"] == "emulator-A /e/tok-1"
    assert isolated["echo_ok"] is True
    assert isolated["stream"] == "data: 0\ndata: 1\ndata: 2\n"
    assert (
        isolated["first_chunk_s"] < 1.0
    )  # streamed through, not buffered (the stream takes 1.8 s)
    assert not any(isolated["leaks"].values()), isolated["leaks"]
    assert isolated["dns_fail_s"] < 1.0  # an outside name fails at once (no 10 s DNS timeout)
    # the control on Docker's default bridge: the same probe sees the host's other service
    bridge_gateway = _gateway(client, "bridge")
    assert control["leaks"][f"{bridge_gateway}:{env['OTHER_PORT']}"] is True
    assert control["service"].startswith("ERROR")  # and the run's alias means nothing there
    client.close()


def test_the_network_is_labelled_and_removed_at_run_end(
    simclient_image: str, services: dict[str, ThreadingHTTPServer], tmp_path: Path
) -> None:
    client = docker_client_or_skip()
    net = open_run_network(
        client,
        "run-net-c",
        [HostService("emulator", services["emulator"].server_address[1])],
        image=simclient_image,
    )
    socket_dir = net._socket_dir
    # an episode kept for inspection stays attached until the run ends
    (tmp_path / "fx").mkdir()
    kept_spec = EpisodeSpec(
        run_id="run-net-c",
        episode_id="run-net-c:t:0:baseline",
        pair_id="run-net-c:t:0",
        task_id="t",
        arm="baseline",
        prompt="true",
        profile=shell_profile(image=simclient_image),
        fixture_dir=tmp_path / "fx",
        timeout_s=60,
        keep_workspace=True,
    )
    backend = DockerBackend(client=client, run_id="run-net-c", run_network=net, host_env={})
    kept = backend.prepare(kept_spec)
    try:
        assert backend.run(kept).exit_code == 0
        network = client.networks.get(net.name)
        labels = network.attrs["Labels"]
        assert labels["pairlab.managed"] == "true" and labels["pairlab.run_id"] == "run-net-c"
        assert labels["pairlab.role"] == "network"
        assert network.attrs["Internal"] is True
        assert network.attrs["Options"]["com.docker.network.bridge.inhibit_ipv4"] == "true"
        relay = client.containers.get(f"{net.name}-relay")
        assert (
            relay.labels["pairlab.role"] == "relay" and relay.attrs["Config"]["User"] == "1000:1000"
        )
        assert (socket_dir / "emulator.sock").is_socket()
    finally:
        net.close()
    net.close()  # idempotent
    assert client.networks.list(names=[net.name]) == []
    assert client.containers.get(kept.container_id).status == "exited"  # kept for inspection
    backend.cleanup(
        kept.model_copy(update={"spec": kept_spec.model_copy(update={"keep_workspace": False})})
    )
    assert client.containers.list(all=True, filters={"label": "pairlab.run_id=run-net-c"}) == []
    assert not socket_dir.exists()
    client.close()


ORPHAN_MAKER = textwrap.dedent(
    """
    import os, sys
    from pairlab.adapters.docker_engine import connect
    from pairlab.adapters.backends.run_network import HostService, open_run_network
    net = open_run_network(connect(), sys.argv[1], [HostService("emulator", 9)], image=sys.argv[2])
    print(net._socket_dir, flush=True)
    print(net.name, flush=True)
    os._exit(0)  # the owning process dies without closing its network
    """
)


def test_orphan_cleanup_removes_dead_runs_networks_only(
    simclient_image: str, services: Any
) -> None:
    client = docker_client_or_skip()
    made = subprocess.run(
        [sys.executable, "-c", ORPHAN_MAKER, "run-net-dead", simclient_image],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ},
    )
    assert made.returncode == 0, made.stderr
    dead_dir, dead_name = made.stdout.strip().splitlines()[-2:]
    assert Path(dead_dir).is_dir()
    live = open_run_network(
        client,
        "run-net-live",
        [HostService("emulator", services["emulator"].server_address[1])],
        image=simclient_image,
    )
    try:
        removed = cleanup_orphans(client, active_run_ids=frozenset())
        assert dead_name in removed["networks"] and f"{dead_name}-relay" in removed["containers"]
        assert client.networks.list(names=[dead_name]) == []
        assert not Path(dead_dir).exists()  # its host socket directory too
        assert live._socket_dir.is_dir()
        assert client.networks.list(names=[live.name]) != []  # this process is alive: not an orphan
        assert live.name not in removed["networks"]
    finally:
        live.close()
    client.close()
