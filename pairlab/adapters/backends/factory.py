"""Choosing a backend by name: the one place that knows both implementations.

It lives apart from ``base`` (the contract) so the contract imports neither backend and
each backend imports only the contract; the Docker SDK is imported only for ``docker``.
"""

from __future__ import annotations

from typing import Any

from pairlab.adapters.backends.base import ExecutionBackend
from pairlab.core.errors import InvalidInputError, ReasonCode


def make_backend(name: str, **opts: Any) -> ExecutionBackend:
    """Build a backend by name; the Docker SDK is imported only for ``docker``."""
    if name == "local":
        from pairlab.adapters.backends.local import LocalBackend

        return LocalBackend(**opts)
    if name == "docker":
        from pairlab.adapters.backends.docker import DockerBackend

        return DockerBackend(**opts)
    raise InvalidInputError(
        f"unknown backend '{name}' (known: local, docker)", reason=ReasonCode.INVALID_INPUT
    )
