"""Where the catalog and the runner profiles live on this machine.

Default: the repository's ``catalog/``, ``runner_profiles/`` and ``interventions/``
next to the installed ``pairlab`` package (an editable install, the container and CI
all use the checkout); overridable with ``PAIRLAB_CATALOG_DIR`` /
``PAIRLAB_PROFILES_DIR`` / ``PAIRLAB_INTERVENTIONS_DIR`` or an explicit argument (a
CLI option).
"""

from __future__ import annotations

import os
from pathlib import Path

import pairlab

REPO_ROOT = Path(pairlab.__file__).resolve().parent.parent


def _resolve(override: Path | str | None, env_var: str, default_name: str) -> Path:
    if override is not None and str(override) != "":
        return Path(override).expanduser()
    from_env = os.environ.get(env_var, "")
    if from_env:
        return Path(from_env).expanduser()
    return REPO_ROOT / default_name


def catalog_dir(override: Path | str | None = None) -> Path:
    """The task catalog: ``override``, else ``$PAIRLAB_CATALOG_DIR``, else ``<repo>/catalog``."""
    return _resolve(override, "PAIRLAB_CATALOG_DIR", "catalog")


def profiles_dir(override: Path | str | None = None) -> Path:
    """Runner profiles: ``override``, else ``$PAIRLAB_PROFILES_DIR``, else ``<repo>/runner_profiles``."""
    return _resolve(override, "PAIRLAB_PROFILES_DIR", "runner_profiles")


def interventions_dir(override: Path | str | None = None) -> Path:
    """Intervention manifests: ``override``, else ``$PAIRLAB_INTERVENTIONS_DIR``, else
    ``<repo>/interventions``."""
    return _resolve(override, "PAIRLAB_INTERVENTIONS_DIR", "interventions")
