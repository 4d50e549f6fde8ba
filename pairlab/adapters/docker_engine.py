"""The Docker engine, reached through the SDK: the primitives every Docker user here shares.

Connecting (an unreachable engine is exit 3, docker-unavailable), asking for a local image
(no pulls: there is no registry), running one SDK call with its errors translated at this
boundary (a missing image is not-found, a lost engine docker-unavailable, anything else
execution-failed), the labels every pairlab resource carries and the owner label
(``host:pid``) that lets a later process tell a dead run's leftovers from a live one's.
A leaf: it imports no other adapter, so the episode backend, the run network and the image
registry all import it downward.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable
from typing import Any, TypeVar

import docker
import docker.errors
import requests.exceptions

from pairlab.core.errors import EnvironmentUnavailable, ExecutionError, ReasonCode

LABEL_MANAGED = "pairlab.managed"
LABEL_RUN = "pairlab.run_id"
LABEL_EPISODE = "pairlab.episode_id"
LABEL_OWNER = "pairlab.owner"
LABEL_KEEP = "pairlab.keep"
LABEL_SOCKET_DIR = "pairlab.socket_dir"  # a run network's host directory of relay sockets
# Resources are labelled with PAIRLAB_DOCKER_SCOPE when it is set (e.g. one per pytest-xdist
# worker); orphan cleanup only touches resources of its own scope (unset = unlabelled ones).
LABEL_SCOPE = "pairlab.scope"
SCOPE_ENV = "PAIRLAB_DOCKER_SCOPE"

T = TypeVar("T")


def connect() -> Any:
    """``docker.from_env()`` with the failure translated (exit 3, docker-unavailable)."""
    try:
        client = docker.from_env()
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise EnvironmentUnavailable(
            f"Docker engine not reachable: {exc}", reason=ReasonCode.DOCKER_UNAVAILABLE
        ) from exc
    return client


def docker_available() -> bool:
    try:
        connect().close()
    except EnvironmentUnavailable:
        return False
    return True


def image_present(image: str, client: Any = None) -> str | None:
    """The local image id of ``image``, or None when it is not present (no pulls: no registry)."""
    docker_client = client if client is not None else connect()
    try:
        return str(docker_client.images.get(image).id)
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.DockerException as exc:
        raise ExecutionError(f"image {image}: {exc}") from exc


def call_docker(what: str, fn: Callable[[], T]) -> T:
    try:
        return fn()
    except docker.errors.ImageNotFound as exc:
        raise ExecutionError(
            f"{what}: image not found ({exc.explanation}); build it with `pairlab images build`",
            reason=ReasonCode.NOT_FOUND,
        ) from exc
    except requests.exceptions.ConnectionError as exc:
        raise EnvironmentUnavailable(
            f"{what}: Docker engine not reachable: {exc}", reason=ReasonCode.DOCKER_UNAVAILABLE
        ) from exc
    except docker.errors.DockerException as exc:
        raise ExecutionError(f"{what}: {exc}", reason=ReasonCode.EXECUTION_FAILED) from exc


def owner_label() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def scope_labels() -> dict[str, str]:
    """The ``pairlab.scope`` label of this process's resources ({} when PAIRLAB_DOCKER_SCOPE
    is unset): orphan cleanup never removes another scope's resources."""
    scope = os.environ.get(SCOPE_ENV, "")
    return {LABEL_SCOPE: scope} if scope else {}


def remove_network(network: Any) -> None:
    """Remove a pairlab run network, first detaching what is still attached to it (episode
    containers kept for inspection stay, without the network)."""
    network.reload()
    for container in network.containers:
        with contextlib.suppress(docker.errors.NotFound):
            network.disconnect(container, force=True)
    network.remove()
