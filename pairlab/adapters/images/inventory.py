"""What the engine holds of the registry's images and the pypi interventions' derived images
(``intervention_images``): list them, prune superseded ones."""

from __future__ import annotations

from typing import Any

from pairlab.adapters.images import intervention_images
from pairlab.adapters.images.build_inputs import input_hash, is_current
from pairlab.adapters.images.docker_cli import run_docker
from pairlab.adapters.images.engine import inspect, labels, require_engine
from pairlab.adapters.images.registry import (
    DEFAULT_PREFIX,
    LABEL_IMAGE,
    LABEL_INPUTS,
    LABEL_PREFIX,
    Log,
    image_prefix,
    load_registry,
    stderr_log,
)
from pairlab.core.errors import EnvironmentUnavailable


def list_images() -> list[dict[str, Any]]:
    """One row per registry image: present, current (input hash matches), id, size, created."""
    registry = load_registry()
    require_engine()
    rows: list[dict[str, Any]] = []
    ids: dict[str, str] = {}
    for spec in registry.values():
        info = inspect(spec.local_tag)
        row: dict[str, Any] = {
            "name": spec.name,
            "tag": spec.local_tag,
            "build": spec.build,
            "present": info is not None,
            "current": None,
            "image_id": (info or {}).get("Id"),
            "size_mb": round(info["Size"] / 1e6, 1) if info else None,
            "created": (info or {}).get("Created"),
            "inputs": labels(info).get(LABEL_INPUTS),
        }
        if info is not None and spec.build != "client":
            base_id = ids.get(spec.base) if spec.base else None
            try:
                row["current"] = is_current(spec, info, input_hash(spec, base_id))
            except EnvironmentUnavailable:
                row["current"] = None  # an input (the Garage binary) is absent: unknown
        ids[spec.name] = str((info or {}).get("Id", ""))
        rows.append(row)
    for found in intervention_images.present_images():
        info = found["info"]
        rows.append(
            {
                "name": labels(info).get(LABEL_IMAGE),
                "tag": found["tag"],
                "build": "intervention",
                "present": True,
                "current": intervention_images.is_current(info),
                "image_id": info.get("Id"),
                "size_mb": round(info["Size"] / 1e6, 1),
                "created": info.get("Created"),
                "inputs": labels(info).get(LABEL_INPUTS),
            }
        )
    return rows


def prune(*, dry_run: bool = False, log: Log = stderr_log) -> list[str]:
    """Remove pairlab images under this prefix that no registry tag points at any more
    (superseded input-hash builds, build stages), and the pypi interventions' derived images
    (``intervention_images``) that a run would not reuse: a superseded build (untagged), a
    manifest or lock changed or gone, a client image rebuilt. The current images stay."""
    registry = load_registry()
    require_engine()
    keep = {
        str(info["Id"])
        for spec in registry.values()
        if (info := inspect(spec.local_tag)) is not None
    }
    keep |= {
        str(found["info"]["Id"])
        for found in intervention_images.present_images()
        if intervention_images.is_current(found["info"]) is not False
    }
    result = run_docker(
        [
            "image",
            "ls",
            "--filter",
            f"label={LABEL_IMAGE}",
            "--format",
            "{{.ID}} {{.Repository}}:{{.Tag}}",
        ]
    )
    stages = run_docker(
        [
            "image",
            "ls",
            "--filter",
            "label=pairlab.stage",
            "--format",
            "{{.ID}} {{.Repository}}:{{.Tag}}",
        ]
    )
    prefix = image_prefix()
    removed: list[str] = []
    seen: set[str] = set()
    for line in (result.stdout + stages.stdout).splitlines():
        image_id, _, ref = line.partition(" ")
        if not ref.startswith(prefix) and ref != "<none>:<none>":
            continue
        full = inspect(image_id)
        if full is None or str(full["Id"]) in keep:
            continue
        if ref == "<none>:<none>" and labels(full).get(LABEL_PREFIX, DEFAULT_PREFIX) != prefix:
            continue
        target = ref if ref != "<none>:<none>" else image_id
        if target in seen:
            continue
        seen.add(target)
        log(f"{'would remove' if dry_run else 'removing'} {target}")
        if not dry_run:
            run_docker(["image", "rm", target])
        removed.append(target)
    return removed
