"""The reference intervention and the run network: what they add to an episode.

* ``token-optimizer mcp`` start: a fresh process, from exec to the ``tools/list`` reply
  (what a CLI waits for before its first request can offer the tools).
* the first ``read_file`` right after the handshake (it may wait for the tokenizer, which
  loads in the background from start-up);
* ``read_file`` of a 100 KB source file (a preview + a ledger row) and ``expand`` of it
  (the full text + a row), median per call over real stdio.
* Run network (needs Docker and the simclient image): ``open_run_network`` (network +
  relay container ready) and a 49 KB POST round trip (Claude's request size, REAL-CLIS.md)
  through the relay vs. straight to the host service from the host, median.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.result import Result

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.intervention_harness import EpisodeDirs, ServerProcess  # noqa: E402

CALLS = 30


def _source(kb: int) -> str:
    lines, size, i = [], 0, 0
    while size < kb * 1024:
        line = f"def handler_{i}(request, context):\n    return context.render(request, {i})\n\n"
        lines.append(line)
        size += len(line)
        i += 1
    return "".join(lines)


def _server_figures() -> list[Result]:
    with tempfile.TemporaryDirectory() as tmp:
        dirs = EpisodeDirs(Path(tmp))
        (dirs.workspace / "big.py").write_text(_source(100))
        starts = []
        for _ in range(5):
            began = time.perf_counter()
            server = ServerProcess(dirs.env("optimizer"), dirs.workspace)
            server.handshake()
            server.request("tools/list")
            starts.append(time.perf_counter() - began)
            server.close()
        server = ServerProcess(dirs.env("optimizer"), dirs.workspace)
        server.handshake()
        began = time.perf_counter()
        server.call("read_file", {"path": "big.py"}, callId="first")
        first_s = time.perf_counter() - began  # the tokenizer may still be loading
        reads, expands = [], []
        for i in range(CALLS):
            began = time.perf_counter()
            preview = server.call("read_file", {"path": "big.py"}, callId=f"r{i}")
            reads.append(time.perf_counter() - began)
            text = preview["result"]["content"][0]["text"]
            ref = next(ln for ln in text.splitlines() if ln.startswith("expansion reference: "))
            began = time.perf_counter()
            server.call("expand", {"ref": ref.split(": ", 1)[1]}, callId=f"e{i}")
            expands.append(time.perf_counter() - began)
        server.close()
    start_s, read_ms, expand_ms = (
        statistics.median(starts),
        statistics.median(reads) * 1e3,
        statistics.median(expands) * 1e3,
    )
    return [
        Result(
            "token-optimizer start to tools/list (median of 5)",
            start_s,
            "s",
            "< 1 s",
            start_s < 1.0,
        ),
        Result("first read_file right after the handshake", first_s, "s", "< 2 s", first_s < 2.0),
        Result(
            "read_file 100 KB -> preview + row (median)", read_ms, "ms", "< 100 ms", read_ms < 100
        ),
        Result("expand 100 KB + row (median)", expand_ms, "ms", "< 100 ms", expand_ms < 100),
    ]


class _Echo(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


PROBE = """
import json, time, urllib.request, sys
body = b"x" * 49152
times = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    urllib.request.urlopen(urllib.request.Request(sys.argv[1], data=body), timeout=10).read()
    times.append(time.perf_counter() - t)
print(json.dumps(times))
"""


def _network_figures() -> list[Result]:
    from pairlab.adapters.docker_engine import docker_available, image_present

    if not docker_available():
        return []
    import docker

    from pairlab.adapters.backends.run_network import HostService, open_run_network
    from tests.integration.backend_fixtures import SIM_IMAGE

    client = docker.from_env()
    if image_present(SIM_IMAGE, client) is None:
        return []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        began = time.perf_counter()
        net = open_run_network(
            client, "bench-run-network", [HostService("emulator", port)], image=SIM_IMAGE
        )
        open_s = time.perf_counter() - began
        with net:
            inside = client.containers.run(
                SIM_IMAGE,
                ["python3", "-c", PROBE, net.url("emulator", "/v1/messages"), str(CALLS)],
                network=net.name,
                remove=True,
                user="1000:1000",
                labels={"pairlab.bench": "intervention"},
            )
        relayed = statistics.median(json.loads(inside))
        direct_out = subprocess.run(
            [sys.executable, "-c", PROBE, f"http://127.0.0.1:{port}/v1/messages", str(CALLS)],
            capture_output=True,
            text=True,
            check=True,
        )
        direct = statistics.median(json.loads(direct_out.stdout))
    finally:
        server.shutdown()
        server.server_close()
        client.close()
    extra_ms = (relayed - direct) * 1e3
    return [
        Result("open_run_network (network + relay ready)", open_s, "s", "< 3 s", open_s < 3.0),
        Result("49 KB POST through the run network (median)", relayed * 1e3, "ms", "info", True),
        Result("relay overhead per request vs direct", extra_ms, "ms", "< 10 ms", extra_ms < 10),
    ]


def run() -> list[Result]:
    return [*_server_figures(), *_network_figures()]


if __name__ == "__main__":
    for result in run():
        print(f"{result.name}: {result.figure:.3g} {result.unit} (target {result.target})")
