"""Leftovers of dead runs: pairlab-managed containers, volumes and run networks, removed.

Everything pairlab creates in the engine carries the labels of ``docker_engine``; a resource
is an orphan when its run is not active, it is not marked keep, and the process that
created it (``pairlab.owner``, ``host:pid``) is gone from this host. Another machine's
worker is never judged from here, and another live run's resources are never touched.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Mapping, Set
from pathlib import Path
from typing import Any

import docker.errors

from pairlab.adapters.backends.process import pid_alive
from pairlab.adapters.docker_engine import (
    LABEL_KEEP,
    LABEL_MANAGED,
    LABEL_OWNER,
    LABEL_RUN,
    LABEL_SCOPE,
    LABEL_SOCKET_DIR,
    call_docker,
    remove_network,
    scope_labels,
)


def _owner_alive(owner: str | None) -> bool:
    if not owner or ":" not in owner:
        return False
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname():
        return True  # another machine's worker: not ours to judge
    return pid_alive(pid)


def cleanup_orphans(client: Any, active_run_ids: Set[str] = frozenset()) -> dict[str, list[str]]:
    """Remove pairlab-managed containers, volumes and run networks whose run is not active.

    A resource is an orphan when it belongs to this process's scope (``scope_labels``),
    its run is not in ``active_run_ids``, it is not marked keep, and the process that
    created it (on this host) is gone.
    """
    removed: dict[str, list[str]] = {"containers": [], "volumes": [], "networks": []}
    scope = scope_labels().get(LABEL_SCOPE, "")

    def orphan(labels: Mapping[str, str]) -> bool:
        return (
            labels.get(LABEL_SCOPE, "") == scope
            and labels.get(LABEL_RUN) not in active_run_ids
            and labels.get(LABEL_KEEP) != "true"
            and not _owner_alive(labels.get(LABEL_OWNER))
        )

    containers = call_docker(
        "list containers",
        # ignore_removed: another process's container may be removed between list and inspect
        lambda: client.containers.list(
            all=True, filters={"label": f"{LABEL_MANAGED}=true"}, ignore_removed=True
        ),
    )
    for container in containers:
        if orphan(container.labels):
            try:
                container.remove(force=True)
                removed["containers"].append(container.name)
            except docker.errors.NotFound:
                pass
    volumes = call_docker(
        "list volumes", lambda: client.volumes.list(filters={"label": f"{LABEL_MANAGED}=true"})
    )
    for volume in volumes:
        if orphan(volume.attrs.get("Labels") or {}):
            try:
                volume.remove(force=True)
                removed["volumes"].append(volume.name)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError:
                pass  # still in use by a container another process is removing
    networks = call_docker(
        "list networks", lambda: client.networks.list(filters={"label": f"{LABEL_MANAGED}=true"})
    )
    for network in networks:
        labels = network.attrs.get("Labels") or {}
        if orphan(labels):
            try:
                remove_network(network)
                removed["networks"].append(network.name)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError:
                continue  # a container of it is still being removed
            _remove_socket_dir(labels)
    return removed


def _remove_socket_dir(labels: Mapping[str, str]) -> None:
    """A dead run network's host directory of relay sockets, when it is on this host."""
    owner, path = labels.get(LABEL_OWNER) or "", labels.get(LABEL_SOCKET_DIR)
    if not path or owner.rpartition(":")[0] != socket.gethostname():
        return
    directory = Path(path)
    if directory.parent == Path(tempfile.gettempdir()) and directory.name.startswith(
        "pairlab-net-"
    ):
        shutil.rmtree(directory, ignore_errors=True)
