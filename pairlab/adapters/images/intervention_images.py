"""A pypi intervention's image for the Docker backend: the client image plus its environment.

A ``pypi`` intervention (docs/interventions.md) runs on Docker in an image *derived* from
the profile's client image, built on first use like every other image and never pulled:

* **What it is.** ``containers/intervention-image/Dockerfile`` (a template: the values are
  written into the context's copy, no build arguments but the base): ``FROM`` the client image
  (``pairlab/claude``, ``pairlab/codex``), the manifest's hashed lock installed with uv
  (``--require-hashes``) into ``/opt/interventions/<id>`` -- the intervention's own
  environment, never the image's ``python3`` -- and the manifest's ``install.debian``
  packages (apt: ``git`` for mcp-server-git), in one layer (uv fetched from PyPI by
  ``containers/worker/fetch_uv.py``, used and removed in the same ``RUN``). The build
  reaches PyPI: the host's CA bundle goes into the context as for the worker image
  (``host_ca``).
* **Its tag.** ``<prefix>intervention-<id>:<client name>-<client version>``, e.g.
  ``pairlab/intervention-mcp-server-git:claude-2.1.332`` (``PAIRLAB_IMAGE_PREFIX`` applies).
  Labels: ``pairlab.image`` (``<client>+<id>``), ``pairlab.intervention``, ``pairlab.client``,
  ``pairlab.manifest`` (the manifest file it was built from), ``pairlab.inputs``,
  ``pairlab.prefix``.
* **Its input hash** (label ``pairlab.inputs``): the client image's id, the Dockerfile,
  ``fetch_uv.py``, the uv version, the lock's bytes, the requirement, its sha256, the
  Debian packages, the command and the id. Not the CA bundle: the lock's hashes fix every
  installed Python byte, the CA only how they are fetched (a worker container with another
  bundle reuses the image); the Debian packages are the mirror's, not pinned. An
  image whose label matches is reused (a ``docker image inspect``, no build); a changed
  lock or a rebuilt client image is a rebuild under the same tag, and the superseded image,
  left untagged, is what ``pairlab images prune`` removes.
* **One builder per tag** (``build_lock.tag_lock``): concurrent first uses wait and reuse.

The arms: the treated arms get ``/opt/interventions/<id>/path`` -- the command alone, a
link into the environment's ``bin``, so the agent's ``python3`` is not the environment's --
first on PATH (the profile's ``treatment.path_prepend``, applied by the Docker backend),
so the manifest's command resolves there. The baseline runs in the *same* derived image with the server
installed but neither configured nor on its PATH: both arms of a pair then run the same
image, layer for layer (the same CLI binary, the same python3, the same system packages),
and the pair differs only in what the treatment declares -- the MCP wiring and the PATH
entry. On the plain client image the baseline would differ in more than the intervention:
the layer also adds the manifest's Debian packages (``git`` for mcp-server-git), which the
agent's own shell tool can run -- a treated agent could ``git diff`` where the baseline
could not, and the measured effect would mix the server with the tools it brought along.
One image for both arms needs no argument that two images cannot differ in a way that
matters.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pairlab.adapters.images.build import ensure_image
from pairlab.adapters.images.build_inputs import host_ca_bundle
from pairlab.adapters.images.build_lock import tag_lock
from pairlab.adapters.images.docker_cli import run_docker
from pairlab.adapters.images.engine import inspect, labels
from pairlab.adapters.images.registry import (
    LABEL_IMAGE,
    LABEL_INPUTS,
    LABEL_PREFIX,
    BuildResult,
    Log,
    image_prefix,
    load_registry,
    spec_for_tag,
    stderr_log,
)
from pairlab.adapters.interventions import (
    PYPI_COMMAND,
    PYPI_PATH_DIR,
    LoadedIntervention,
    load_intervention,
)
from pairlab.adapters.paths import REPO_ROOT
from pairlab.core.errors import EnvironmentUnavailable, ExecutionError, PairlabError, ReasonCode

DOCKERFILE: Final = REPO_ROOT / "containers" / "intervention-image" / "Dockerfile"
FETCH_UV: Final = REPO_ROOT / "containers" / "worker" / "fetch_uv.py"
UV_VERSION: Final = "0.13.9"  # the worker image's (containers/worker/Dockerfile)
INSTALL_ROOT: Final = "/opt/interventions"
LABEL_INTERVENTION: Final = "pairlab.intervention"
LABEL_CLIENT: Final = "pairlab.client"
LABEL_MANIFEST: Final = "pairlab.manifest"


def bin_dir(intervention_id: str) -> str:
    """The treated arms' PATH head inside the derived image: ``/opt/interventions/<id>/path``,
    which holds only the manifest's command (a link into the environment's ``bin``), so the
    agent's own ``python3`` stays the image's, as in the baseline."""
    return f"{INSTALL_ROOT}/{intervention_id}/{PYPI_PATH_DIR}"


@dataclass(frozen=True)
class DerivedImage:
    """The derived image of ``intervention`` on the client image ``client`` (a registry name)."""

    client: str
    client_version: str
    intervention: LoadedIntervention

    @property
    def name(self) -> str:
        return f"{self.client}+{self.intervention.manifest.id}"

    @property
    def tag(self) -> str:
        repo = f"{image_prefix()}intervention-{self.intervention.manifest.id}"
        return f"{repo}:{self.client}-{self.client_version}"

    def lock_bytes(self) -> bytes:
        lock = self.intervention.manifest.install.lock
        if lock is None:  # checked by the caller (intervention_install.lock_file)
            raise ValueError(f"intervention '{self.intervention.manifest.id}' has no lock")
        return (self.intervention.path.parent / lock).read_bytes()

    def input_hash(self, client_id: str) -> str:
        manifest = self.intervention.manifest
        inputs = {
            "client_image": client_id,
            "dockerfile": hashlib.sha256(DOCKERFILE.read_bytes()).hexdigest(),
            "fetch_uv": hashlib.sha256(FETCH_UV.read_bytes()).hexdigest(),
            "uv": UV_VERSION,
            "lock": hashlib.sha256(self.lock_bytes()).hexdigest(),
            "pypi": manifest.install.pypi,
            "sha256": manifest.install.sha256,
            "command": manifest.command,
            "debian": manifest.install.debian,
            "id": manifest.id,
        }
        return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]


def derived_for(client_tag: str, loaded: LoadedIntervention) -> DerivedImage:
    """The derived image of ``loaded`` on the profile's ``client_tag`` (a registry client
    image, e.g. ``pairlab/claude:2.1.332``; anything else cannot be derived from)."""
    spec = spec_for_tag(client_tag)
    if spec is None or spec.build != "client":
        raise ExecutionError(
            f"intervention '{loaded.manifest.id}': the profile's image {client_tag} is not a "
            "client image of containers/images.yaml; a pypi intervention is installed only "
            "into those on Docker",
            reason=ReasonCode.INTERVENTION_INSTALL_FAILED,
        )
    version = spec.tag.rsplit(":", 1)[1]
    return DerivedImage(spec.name, version, loaded)


def dockerfile(derived: DerivedImage, digest: str) -> str:
    """The Dockerfile template with this image's values written in (the id is validated by
    the manifest, the command here: no quoting needed; the labels are one LABEL)."""
    manifest = derived.intervention.manifest
    if not PYPI_COMMAND.match(manifest.command):
        raise ExecutionError(
            f"intervention '{manifest.id}': the command {manifest.command!r} is not a file "
            "name its environment's bin can hold",
            reason=ReasonCode.INTERVENTION_INSTALL_FAILED,
        )
    marks = {
        LABEL_IMAGE: derived.name,
        LABEL_INTERVENTION: manifest.id,
        LABEL_CLIENT: derived.client,
        LABEL_INPUTS: digest,
        LABEL_PREFIX: image_prefix(),
        LABEL_MANIFEST: str(derived.intervention.path.resolve()),
    }
    values = {
        "@INTERVENTION_ID@": manifest.id,
        "@COMMAND@": manifest.command,
        "@UV_VERSION@": UV_VERSION,
        "@DEBIAN@": " ".join(manifest.install.debian),
        "@LABELS@": " ".join(f"{k}={json.dumps(v)}" for k, v in marks.items()),
    }
    text = DOCKERFILE.read_text(encoding="utf-8")
    for token, value in values.items():
        text = text.replace(token, value)
    return text


def _build(derived: DerivedImage, client_tag: str, digest: str, log: Log) -> None:
    manifest = derived.intervention.manifest
    with tempfile.TemporaryDirectory(prefix=f"pairlab-intervention-{manifest.id}-") as tmp:
        context = Path(tmp)
        (context / "Dockerfile").write_text(dockerfile(derived, digest), encoding="utf-8")
        shutil.copy2(FETCH_UV, context / "fetch_uv.py")
        (context / "lock.txt").write_bytes(derived.lock_bytes())
        ca = host_ca_bundle()
        (context / "host-ca.crt").write_bytes(ca.read_bytes() if ca else b"")
        args = ["build", "--pull=false", "-t", derived.tag, "--build-arg"]
        args += [f"BASE_IMAGE={client_tag}"]
        log(f"building {derived.tag} on {client_tag} ({manifest.install.pypi})")
        result = run_docker([*args, str(context)], stream=True)
    if result.returncode != 0:
        raise ExecutionError(
            f"intervention '{manifest.id}' ({manifest.install.pypi}): install failed: docker "
            f"build of {derived.tag} exited {result.returncode} (output above)",
            reason=ReasonCode.INTERVENTION_INSTALL_FAILED,
        )


def ensure_intervention_image(
    client_tag: str, loaded: LoadedIntervention, *, log: Log = stderr_log
) -> BuildResult:
    """The derived image of ``loaded`` on ``client_tag``: reused when its input hash
    matches, else built (the client image first, through ``ensure_image``) under the tag's
    build lock. Where it cannot be checked or built (a worker container: no docker
    command, no containers/intervention-image) an image already present under the tag is
    used with a warning; none present is the error (exit 3)."""
    started = time.monotonic()
    derived = derived_for(client_tag, loaded)
    resolved = ensure_image(client_tag, log=log)
    client = inspect(resolved)
    if client is None:
        raise ExecutionError(
            f"image {resolved} is absent after ensure_image", reason=ReasonCode.EXECUTION_FAILED
        )
    info = inspect(derived.tag)
    try:
        digest = derived.input_hash(str(client["Id"]))
    except OSError as exc:
        # the build inputs are not on this machine (a worker container carries no
        # containers/intervention-image): an image already present is used as it is
        if info is None:
            raise EnvironmentUnavailable(
                f"image {derived.tag} is absent and cannot be built here ({exc}); build it "
                f"where the checkout is: pairlab episode run --backend docker "
                f"--intervention {loaded.manifest.id} ...",
                reason=ReasonCode.INTERVENTION_INSTALL_FAILED,
            ) from exc
        log(f"using the present {derived.tag} unchecked ({exc})")
        return BuildResult(derived.name, derived.tag, str(info["Id"]), None, True, 0.0)
    reused = labels(info).get(LABEL_INPUTS) == digest
    if not reused:
        with tag_lock(derived.tag, log):
            info = inspect(derived.tag)
            reused = labels(info).get(LABEL_INPUTS) == digest
            if not reused:
                try:
                    _build(derived, resolved, digest, log)
                except EnvironmentUnavailable as exc:
                    if info is None:
                        raise
                    log(f"using the present {derived.tag} unchecked ({exc})")
                info = inspect(derived.tag)
    if info is None:
        raise ExecutionError(
            f"image {derived.tag}: the build finished but the image is absent",
            reason=ReasonCode.INTERVENTION_INSTALL_FAILED,
        )
    seconds = time.monotonic() - started
    log(f"{derived.tag}: {'up to date' if reused else 'built'} in {seconds:.1f} s")
    return BuildResult(derived.name, derived.tag, str(info["Id"]), digest, reused, seconds)


# --- list / prune ------------------------------------------------------------------------


def present_images() -> list[dict[str, Any]]:
    """The engine's derived images under this prefix: one inspect per tag."""
    result = run_docker(
        [
            "image",
            "ls",
            "--filter",
            f"label={LABEL_INTERVENTION}",
            "--format",
            "{{.Repository}}:{{.Tag}}",
        ]
    )
    found: list[dict[str, Any]] = []
    for ref in sorted(set(result.stdout.split())):
        if not ref.startswith(image_prefix()) or ref.endswith(":<none>"):
            continue
        info = inspect(ref)
        if info is not None:
            found.append({"tag": ref, "info": info})
    return found


def is_current(info: dict[str, Any]) -> bool | None:
    """Whether a present derived image would be reused for the manifest it was built from
    (label ``pairlab.manifest``; a shipped id when that file is gone from this machine, as in
    a worker container) on its client image as they are now: False when the manifest, its
    lock or the client image is gone or changed; None when its client image is not present
    (nothing to compare with)."""
    marks = labels(info)
    registry = load_registry()
    spec = registry.get(marks.get(LABEL_CLIENT, ""))
    if spec is None:
        return False
    try:
        source = marks.get(LABEL_MANIFEST, "")
        ident = marks.get(LABEL_INTERVENTION, "")
        loaded = load_intervention(source if source and Path(source).is_file() else ident)
        if loaded.manifest.id != ident:
            return False
        derived = derived_for(spec.tag, loaded)
        client = inspect(spec.local_tag)
        if client is None:
            return None
        return marks.get(LABEL_INPUTS) == derived.input_hash(str(client["Id"]))
    except (PairlabError, OSError, ValueError):  # manifest or lock gone, malformed
        return False


__all__ = [
    "DerivedImage",
    "bin_dir",
    "derived_for",
    "ensure_intervention_image",
    "is_current",
    "present_images",
]
