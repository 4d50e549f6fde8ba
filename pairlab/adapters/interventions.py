"""Finding an intervention manifest: ``--intervention ID|PATH`` (default ``reference``).

An id names ``interventions/<id>.yaml`` (``adapters.paths.interventions_dir``), whose
``id`` field must equal the file's stem; anything with a path separator or a ``.yaml``
/ ``.yml`` suffix is read as a file path. An unknown id is refused with the shipped ids
(``unknown-intervention``, exit 2); a malformed manifest with the schema's reason codes
(``core/schemas/intervention_manifest``), before any episode runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pairlab.adapters.paths import interventions_dir
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.intervention_manifest import (
    InterventionIdentity,
    InterventionManifest,
    intervention_identity,
    load_manifest,
)

# A pypi intervention's command: a file name in its environment's bin. Both installs
# (intervention_install locally, images.intervention_images on Docker) link it alone into
# PYPI_PATH_DIR beside the environment, the treated arms' PATH head.
PYPI_COMMAND: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
PYPI_PATH_DIR: Final = "path"


@dataclass(frozen=True)
class LoadedIntervention:
    """One validated manifest, where it was read from, and its identity (id, version, hash)."""

    manifest: InterventionManifest
    path: Path
    identity: InterventionIdentity


def shipped_intervention_ids(directory: Path | str | None = None) -> list[str]:
    """The ids of the manifests under ``interventions/`` (sorted)."""
    base = interventions_dir(directory)
    return sorted(p.stem for p in base.glob("*.yaml") if p.is_file()) if base.is_dir() else []


def _is_path(ref: str) -> bool:
    return "/" in ref or "\\" in ref or ref.endswith((".yaml", ".yml"))


def load_intervention(ref: str, directory: Path | str | None = None) -> LoadedIntervention:
    """The manifest ``ref`` names (a shipped id or a file path), validated."""
    if _is_path(ref):
        path = Path(ref).expanduser()
        if not path.is_file():
            raise InvalidInputError(
                f"intervention manifest {path} not found", reason=ReasonCode.UNKNOWN_INTERVENTION
            )
        manifest = load_manifest(path)
    else:
        path = interventions_dir(directory) / f"{ref}.yaml"
        if not path.is_file():
            known = ", ".join(shipped_intervention_ids(directory)) or "none"
            raise InvalidInputError(
                f"unknown intervention '{ref}' (shipped: {known}; or give a manifest's path)",
                reason=ReasonCode.UNKNOWN_INTERVENTION,
            )
        manifest = load_manifest(path)
        if manifest.id != ref:
            raise InvalidInputError(
                f"{path}: intervention refused: field 'id': {manifest.id!r} differs from the "
                f"file name {ref!r}",
                reason=ReasonCode.INVALID_INTERVENTION,
            )
    return LoadedIntervention(manifest, path.resolve(), intervention_identity(manifest))


__all__ = [
    "PYPI_COMMAND",
    "PYPI_PATH_DIR",
    "LoadedIntervention",
    "load_intervention",
    "shipped_intervention_ids",
]
