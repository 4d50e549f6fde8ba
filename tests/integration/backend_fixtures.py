"""Fixtures for the execution-backend tests: the simclient image, test profiles, probes of leftovers.

The Docker tests reuse one image, ``pairlab/simclient:<version>``, built once per
session by ``containers/build-images.sh`` (cached layers make a rebuild cheap).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from pairlab.adapters.images.registry import local_tag
from pairlab.core.schemas.profile import RunnerProfile, parse_profile
from tests.support import REPO_ROOT, require


def simclient_version() -> str:
    text = (REPO_ROOT / "containers/simclient/pairlab_simclient/__init__.py").read_text()
    for line in text.splitlines():
        if line.startswith("__version__"):
            return line.split('"')[1]
    raise AssertionError("no __version__ in pairlab_simclient")


SIM_IMAGE = local_tag(f"pairlab/simclient:{simclient_version()}")  # PAIRLAB_IMAGE_PREFIX applies


def docker_client_or_skip() -> Any:
    from pairlab.adapters.docker_engine import docker_available

    available = docker_available()
    require(available, "Docker engine")
    import docker

    return docker.from_env()


@pytest.fixture(scope="session")
def simclient_image() -> str:
    """The simulator image, (re)built by containers/build-images.sh once per session.

    Always built: the tag names the simulator's version, not its source, and
    Docker's layer cache makes an unchanged rebuild take about a second.
    """
    client = docker_client_or_skip()
    try:
        result = subprocess.run(
            ["bash", str(REPO_ROOT / "containers/build-images.sh")],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert result.returncode == 0, f"build-images.sh failed:\n{result.stderr[-3000:]}"
        client.images.get(SIM_IMAGE)
    finally:
        client.close()
    return SIM_IMAGE


def shell_profile(
    *,
    image: str = SIM_IMAGE,
    home_seed: Path | None = None,
    env_allowlist: list[str] | None = None,
    secrets: list[str] | None = None,
    memory_mb: int = 256,
    treatment_env: dict[str, str] | None = None,
) -> RunnerProfile:
    """A tiny "agent": ``sh -c <prompt>`` in every arm (the prompt is the script)."""
    data: dict[str, Any] = {
        "client": "shell",
        "image": image,
        "command": ["sh", "-c"],
        "arm_args": {"baseline": ["{prompt}"], "optimizer": ["{prompt}"]},
        "baseline_isolation": {
            "description": "fresh HOME per episode (test profile)",
            "fresh_home": True,
            "strips": ["everything"],
            "probe": "none",
        },
        "treatment": {
            "home_seed": str(home_seed) if home_seed else None,
            "env": treatment_env or {},
        },
        "usage": {"reader": "claude", "paths": [".claude/projects/**/*.jsonl"]},
        "quota": {"probe": "none"},
        "certification": {"level": "simulator"},
        "resources": {"cpus": 1.0, "memory_mb": memory_mb, "pids": 64},
        "network": "none",
    }
    if env_allowlist is not None:
        data["env_allowlist"] = env_allowlist
    if secrets is not None:
        data["secrets"] = secrets
    return parse_profile(data)
