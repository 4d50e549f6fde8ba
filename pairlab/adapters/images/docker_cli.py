"""The ``docker`` command line, for image builds (the SDK serves episodes): one runner."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

from pairlab.core.errors import EnvironmentUnavailable, ReasonCode


def _stderr_fd() -> int | None:
    """The file descriptor behind ``sys.stderr``; None when it has none (a captured or
    in-memory stream: pytest's capture, an embedding host)."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return None


def run_docker(args: Sequence[str], *, stream: bool = False) -> subprocess.CompletedProcess[str]:
    """``docker ARGS``; ``stream`` sends its output to stderr (progress), else captures it.
    A stderr without a file descriptor gets the output once the command ends (a build
    under a captured stderr -- ``pairlab eval`` called in-process -- once failed with
    ``fileno``). A missing ``docker`` command is exit 3, docker-unavailable."""
    fd = _stderr_fd() if stream else None
    try:
        result = subprocess.run(
            ["docker", *args],
            stdout=fd if fd is not None else subprocess.PIPE,
            stderr=fd if fd is not None else (subprocess.STDOUT if stream else subprocess.PIPE),
            text=True,
            check=False,
        )
    except FileNotFoundError as exc:
        raise EnvironmentUnavailable(
            "the docker command is not installed", reason=ReasonCode.DOCKER_UNAVAILABLE
        ) from exc
    if stream and fd is None and result.stdout:
        sys.stderr.write(result.stdout)
    return result
