"""A real Prefect server for tests: started on a free loopback port with its own
PREFECT_HOME and SQLite database, the v1 UI (no external requests), analytics off.

Used by the deployment, browser and work-pool tests. ``PrefectServer.env`` is the
environment a client or worker process needs to talk to it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# a ceiling, not a wait: readiness returns at once; 4 xdist workers start their servers at the
# same moment on 2 cores, which under load took over 180 s
STARTUP_TIMEOUT_S = 600


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prefect_env(home: Path, api_url: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "PREFECT_HOME": str(home),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "DO_NOT_TRACK": "1",
            "PREFECT_SERVER_UI_V2_ENABLED": "false",
            "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{home / 'prefect.db'}",
            "PREFECT_LOGGING_LEVEL": "WARNING",
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": str(STARTUP_TIMEOUT_S),
            # a loaded 2-core machine with 4 test workers: the SQLite server waits longer for
            # its lock before answering 503, and clients retry a 500/504 as well as the 503s
            # and 429s they retry by default (as the stack's workers do)
            "PREFECT_SERVER_DATABASE_TIMEOUT": "60",
            "PREFECT_CLIENT_RETRY_EXTRA_CODES": "500,504",
        }
    )
    if api_url:
        env["PREFECT_API_URL"] = api_url
    return env


@dataclass
class PrefectServer:
    url: str  # http://127.0.0.1:PORT
    home: Path
    process: subprocess.Popen[bytes]

    @property
    def api_url(self) -> str:
        return f"{self.url}/api"

    @property
    def env(self) -> dict[str, str]:
        return prefect_env(self.home, self.api_url)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/health", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


@contextlib.contextmanager
def running_prefect_server(home: Path) -> Iterator[PrefectServer]:
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (home / "server.log").open("wb")
    env = prefect_env(home)
    # The UI tells the browser to call PREFECT_UI_API_URL, which otherwise defaults to port 4200.
    env["PREFECT_UI_API_URL"] = f"{url}/api"
    env["PREFECT_SERVER_API_PORT"] = str(port)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "prefect",
            "server",
            "start",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _healthy(url):
            if proc.poll() is not None:
                raise RuntimeError(
                    f"prefect server exited: {(home / 'server.log').read_text()[-2000:]}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError("prefect server did not become healthy in time")
            time.sleep(0.5)
        yield PrefectServer(url=url, home=home, process=proc)
    finally:
        stop_process_group(proc, timeout=20)
        log.close()


def stop_process_group(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM the process group a test started (``start_new_session=True``); SIGKILL it
    if it has not exited within ``timeout`` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
