"""The team stack of infra/compose.yaml, driven from ``pairlab stack up|down|status``.

``up`` builds the images the compose file names (the image registry, ``images.py``),
writes the stack's secrets once (``stack.env``, mode 600: PostgreSQL password, Garage
RPC secret and admin token, the S3 key) and the host's S3 settings (``s3.env``: the
standard AWS variables for ``pairlab publish|pull`` from this machine), runs
``docker compose up -d`` (the plugin, else docker-compose v1) and waits until every
service with a health check is healthy and every one-shot service exited 0.
``down`` stops and removes the containers and keeps the volumes unless asked.

The state directory is ``~/.config/pairlab/stack`` (``PAIRLAB_STACK_DIR``); the compose
project name ``pairlab`` (``PAIRLAB_STACK_PROJECT``): tests use their own project,
ports and work dir, so they never touch a stack a user runs.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pairlab.adapters.paths import REPO_ROOT
from pairlab.core.errors import EnvironmentUnavailable, ExecutionError, ReasonCode

COMPOSE_FILE: Final = REPO_ROOT / "infra" / "compose.yaml"
STACK_IMAGES: Final = ("worker", "postgres", "garage", "simclient", "claude", "codex")
ONE_SHOT: Final = frozenset({"garage-init", "deploy"})
DEFAULT_WORK_DIR: Final = "/srv/pairlab/work"
Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(f"stack: {message}", file=sys.stderr, flush=True)


@dataclass
class StackSettings:
    project: str = "pairlab"
    state_dir: Path = field(default_factory=lambda: Path.home() / ".config" / "pairlab" / "stack")
    work_dir: str = DEFAULT_WORK_DIR
    ui_port: int = 4200
    s3_port: int = 3900
    workers: int = 1

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> StackSettings:
        source = os.environ if env is None else env
        settings = cls()
        if source.get("PAIRLAB_STACK_PROJECT"):
            settings.project = source["PAIRLAB_STACK_PROJECT"]
        if source.get("PAIRLAB_STACK_DIR"):
            settings.state_dir = Path(source["PAIRLAB_STACK_DIR"]).expanduser()
        if source.get("PAIRLAB_WORK_DIR"):
            settings.work_dir = source["PAIRLAB_WORK_DIR"]
        for name, attr in (("PAIRLAB_UI_PORT", "ui_port"), ("PAIRLAB_S3_PORT", "s3_port")):
            if source.get(name):
                setattr(settings, attr, int(source[name]))
        for name, value in overrides.items():
            if value is not None:
                setattr(settings, name, value)
        return settings

    @property
    def env_file(self) -> Path:
        return self.state_dir / "stack.env"

    @property
    def s3_env_file(self) -> Path:
        return self.state_dir / "s3.env"

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"

    @property
    def s3_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"


def compose_command() -> list[str]:
    docker = shutil.which("docker")
    if docker is not None:
        probe = subprocess.run([docker, "compose", "version"], capture_output=True, check=False)
        if probe.returncode == 0:
            return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    if legacy is None:
        raise EnvironmentUnavailable(
            "neither `docker compose` (plugin) nor docker-compose is installed",
            reason=ReasonCode.DOCKER_UNAVAILABLE,
        )
    return [legacy]


def read_env_file(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            name, sep, value = line.partition("=")
            if sep and not name.startswith("#"):
                values[name.strip()] = value.strip()
    return values


def _write_private(path: Path, lines: Sequence[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def ensure_env_files(settings: StackSettings) -> dict[str, str]:
    """The stack's secrets (generated once, kept) and this run's settings, written to
    ``stack.env``; the host's AWS variables to ``s3.env``. Returns the stack's values."""
    values = read_env_file(settings.env_file)
    generated: dict[str, tuple[str, int]] = {  # name: (prefix, random bytes as hex)
        "POSTGRES_PASSWORD": ("", 16),
        "GARAGE_RPC_SECRET": ("", 32),
        "GARAGE_ADMIN_TOKEN": ("", 24),
        "PAIRLAB_S3_KEY_ID": ("GK", 12),  # Garage's key id format: GK + 24 hex digits
        "PAIRLAB_S3_SECRET": ("", 32),
    }
    for name, (prefix, size) in generated.items():
        if name not in values:
            values[name] = prefix + secrets.token_hex(size)
    values.update(
        {
            "PAIRLAB_WORK_DIR": settings.work_dir,
            "PAIRLAB_UI_PORT": str(settings.ui_port),
            "PAIRLAB_S3_PORT": str(settings.s3_port),
            "PAIRLAB_IMAGE_PREFIX": os.environ.get("PAIRLAB_IMAGE_PREFIX", "") or "pairlab/",
        }
    )
    header = "# pairlab stack secrets and settings (pairlab stack up); keep private"
    _write_private(settings.env_file, [header, *(f"{k}={v}" for k, v in sorted(values.items()))])
    _write_private(
        settings.s3_env_file,
        [
            "# the stack's Garage for pairlab publish/pull on this machine: set -a; . THIS; set +a",
            f"AWS_ACCESS_KEY_ID={values['PAIRLAB_S3_KEY_ID']}",
            f"AWS_SECRET_ACCESS_KEY={values['PAIRLAB_S3_SECRET']}",
            "AWS_DEFAULT_REGION=us-east-1",
            f"AWS_ENDPOINT_URL_S3={settings.s3_endpoint}",
            "PAIRLAB_S3_ADDRESSING=path",
            "PAIRLAB_S3_RETRIES=6",  # rides out a Garage node restart (backoff 1..16 s)
            "PAIRLAB_STORE=s3://pairlab/runs",
        ],
    )
    return values


def compose(
    settings: StackSettings, *args: str, capture: bool = False, check: bool = True
) -> subprocess.CompletedProcess[str]:
    argv = [
        *compose_command(),
        "--env-file",
        str(settings.env_file),
        "-p",
        settings.project,
        "-f",
        str(COMPOSE_FILE),
        *args,
    ]
    result = subprocess.run(
        argv,
        stdout=subprocess.PIPE if capture else sys.stderr,
        stderr=subprocess.PIPE if capture else sys.stderr,
        text=True,
        check=False,
    )
    if check and result.returncode != 0:
        detail = (result.stderr or "").strip()[-1500:] if capture else "(output above)"
        raise ExecutionError(
            f"docker compose {args[0]} failed (exit {result.returncode}) {detail}",
            reason=ReasonCode.EXECUTION_FAILED,
        )
    return result


@dataclass
class ServiceState:
    service: str
    container: str
    status: str  # running, exited, ...
    health: str | None  # healthy, starting, unhealthy, or None (no health check)
    exit_code: int | None

    @property
    def ready(self) -> bool:
        if self.service in ONE_SHOT:
            return self.status == "exited" and self.exit_code == 0
        if self.health is not None:
            return self.status == "running" and self.health == "healthy"
        return self.status == "running"

    @property
    def failed(self) -> bool:
        if self.service in ONE_SHOT:
            return self.status == "exited" and self.exit_code not in (0, None)
        return self.health == "unhealthy"

    def to_json(self) -> dict[str, Any]:
        return {
            "service": self.service,
            "container": self.container,
            "status": self.status,
            "health": self.health,
            "exit_code": self.exit_code,
            "ready": self.ready,
        }


def service_states(settings: StackSettings) -> list[ServiceState]:
    from pairlab.adapters.docker_engine import connect

    client = connect()
    try:
        containers = client.containers.list(
            all=True, filters={"label": f"com.docker.compose.project={settings.project}"}
        )
        states = []
        for container in containers:
            state = container.attrs.get("State", {})
            health = (state.get("Health") or {}).get("Status")
            states.append(
                ServiceState(
                    service=container.labels.get("com.docker.compose.service", "?"),
                    container=container.name,
                    status=str(state.get("Status", "?")),
                    health=health,
                    exit_code=state.get("ExitCode") if state.get("Status") == "exited" else None,
                )
            )
        return sorted(states, key=lambda s: (s.service, s.container))
    finally:
        client.close()


def compose_services() -> list[str]:
    import yaml

    config = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    return list(config["services"])


def wait_healthy(
    settings: StackSettings, *, timeout_s: float, log: Log = _stderr
) -> list[ServiceState]:
    expected = set(compose_services())
    deadline = time.monotonic() + timeout_s
    last_report = ""
    while True:
        states = service_states(settings)
        seen = {s.service for s in states}
        waiting = sorted({s.service for s in states if not s.ready} | (expected - seen))
        failed = [s for s in states if s.failed]
        if failed:
            names = ", ".join(f"{s.service} ({s.health or f'exit {s.exit_code}'})" for s in failed)
            raise EnvironmentUnavailable(
                f"stack {settings.project}: {names}; see `docker logs {failed[0].container}`",
                reason=ReasonCode.STACK_UNHEALTHY,
            )
        if not waiting:
            return states
        report = ", ".join(waiting)
        if report != last_report:
            log(f"waiting for {report}")
            last_report = report
        if time.monotonic() > deadline:
            raise EnvironmentUnavailable(
                f"stack {settings.project}: not healthy after {timeout_s:.0f} s (waiting for {report})",
                reason=ReasonCode.STACK_UNHEALTHY,
            )
        time.sleep(2)


def stack_up(
    settings: StackSettings,
    *,
    build: bool = True,
    timeout_s: float = 600.0,
    log: Log = _stderr,
) -> list[ServiceState]:
    started = time.monotonic()
    compose_command()
    if build:
        from pairlab.adapters.images.build import build_images

        build_images(STACK_IMAGES, log=log)
    ensure_env_files(settings)
    work = Path(settings.work_dir)
    if not work.is_absolute():
        raise EnvironmentUnavailable(
            f"PAIRLAB_WORK_DIR must be an absolute path (got {settings.work_dir})",
            reason=ReasonCode.INVALID_INPUT,
        )
    work.mkdir(parents=True, exist_ok=True)
    log(f"starting project {settings.project} ({settings.workers} worker(s))")
    compose(settings, "up", "-d", "--scale", f"worker={settings.workers}")
    states = wait_healthy(settings, timeout_s=timeout_s, log=log)
    log(f"healthy in {time.monotonic() - started:.0f} s")
    return states


def stack_down(settings: StackSettings, *, volumes: bool = False) -> None:
    compose_command()
    if not settings.env_file.is_file():
        ensure_env_files(settings)
    args = ["down", "--remove-orphans"] + (["--volumes"] if volumes else [])
    compose(settings, *args)


def endpoints(settings: StackSettings) -> dict[str, str]:
    values = read_env_file(settings.env_file)
    ui_port = values.get("PAIRLAB_UI_PORT", str(settings.ui_port))
    s3_port = values.get("PAIRLAB_S3_PORT", str(settings.s3_port))
    return {
        "ui": f"http://127.0.0.1:{ui_port}",
        "api": f"http://127.0.0.1:{ui_port}/api",
        "s3": f"http://127.0.0.1:{s3_port}",
        "bucket": "s3://pairlab/runs",
        "credentials": str(settings.s3_env_file),
        "secrets": str(settings.env_file),
    }
