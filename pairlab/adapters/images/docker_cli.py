"""The ``docker`` command line, for image builds (the SDK serves episodes): one runner."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

from pairlab.core.errors import EnvironmentUnavailable, ReasonCode


def run_docker(args: Sequence[str], *, stream: bool = False) -> subprocess.CompletedProcess[str]:
    """``docker ARGS``; ``stream`` sends its output to stderr (progress), else captures it.
    A missing ``docker`` command is exit 3, docker-unavailable."""
    try:
        return subprocess.run(
            ["docker", *args],
            stdout=sys.stderr if stream else subprocess.PIPE,
            stderr=sys.stderr if stream else subprocess.PIPE,
            text=True,
            check=False,
        )
    except FileNotFoundError as exc:
        raise EnvironmentUnavailable(
            "the docker command is not installed", reason=ReasonCode.DOCKER_UNAVAILABLE
        ) from exc
