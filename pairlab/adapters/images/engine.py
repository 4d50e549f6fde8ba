"""The engine's view of an image, through its API (no docker CLI needed: a worker container
that only has the mounted socket checks its images the same way)."""

from __future__ import annotations

import threading
from typing import Any

import docker.errors

from pairlab.adapters.docker_engine import connect
from pairlab.core.errors import ExecutionError, ReasonCode


def require_engine() -> None:
    """The engine answers (exit 3, docker-unavailable, when it does not)."""
    connect().close()


_client_lock = threading.Lock()
_sdk_client: Any = None


def inspect(tag: str) -> dict[str, Any] | None:
    """``docker image inspect`` of a tag or id; None when the engine has no such image."""
    global _sdk_client
    with _client_lock:
        if _sdk_client is None:
            _sdk_client = connect()
        client = _sdk_client
    try:
        return dict(client.api.inspect_image(tag))
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.APIError as exc:
        if exc.status_code == 404:
            return None
        raise ExecutionError(f"image {tag}: {exc}", reason=ReasonCode.EXECUTION_FAILED) from exc


def labels(info: dict[str, Any] | None) -> dict[str, str]:
    if info is None:
        return {}
    return dict((info.get("Config") or {}).get("Labels") or {})
