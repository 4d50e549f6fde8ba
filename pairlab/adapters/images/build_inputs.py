"""What an image is built from, and its input hash.

The build context of a ``dockerfile`` image is assembled from the registry row's
``inputs`` (repository-relative files and directories, placed relative to its
``context_root``), its extra ``files`` and, with ``host_ca``, the host's CA bundle. The
input hash covers those bytes, the Dockerfile (or the build script), the build kind and
the base image's id; it is stored as the label ``pairlab.inputs``, and an image whose
label equals the hash of the current inputs is current (:func:`is_current`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from pairlab.adapters.images.engine import labels
from pairlab.adapters.images.registry import LABEL_INPUTS, ImageSpec
from pairlab.adapters.paths import REPO_ROOT
from pairlab.core.errors import InvalidInputError, ReasonCode

HOST_CA_CANDIDATES: Final = (
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
)


def _files_under(path: Path) -> Iterable[Path]:
    if path.is_file():
        yield path
        return
    for child in sorted(path.rglob("*")):
        if child.is_file() and "__pycache__" not in child.parts and child.suffix != ".pyc":
            yield child


def context_files(spec: ImageSpec, repo: Path = REPO_ROOT) -> list[tuple[str, Path]]:
    """(path in the build context, source file) for every input of a dockerfile image."""
    root = repo / spec.context_root
    found: list[tuple[str, Path]] = []
    for entry in spec.inputs:
        source = repo / entry
        if not source.exists():
            raise InvalidInputError(
                f"image {spec.name}: input {entry} does not exist", reason=ReasonCode.NOT_FOUND
            )
        for file in _files_under(source):
            found.append((file.relative_to(root).as_posix(), file))
    return found


def host_ca_bundle() -> Path | None:
    for candidate in (os.environ.get("SSL_CERT_FILE", ""), *HOST_CA_CANDIDATES):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def extra_file(spec: ImageSpec, source: str) -> Path:
    if source == "garage-binary":
        from pairlab.adapters.store.garage import require_garage_binary

        return require_garage_binary()
    raise InvalidInputError(
        f"image {spec.name}: unknown file source {source!r}", reason=ReasonCode.MALFORMED_INPUT
    )


def _digest(parts: Iterable[tuple[str, bytes]]) -> str:
    digest = hashlib.sha256()
    for label, data in parts:
        digest.update(label.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()[:16]


def _file_digest(path: Path) -> bytes:
    hasher = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            hasher.update(block)
    return hasher.digest()


def input_hash(spec: ImageSpec, base_id: str | None, repo: Path = REPO_ROOT) -> str:
    parts: list[tuple[str, bytes]] = [
        ("build", spec.build.encode()),
        ("base", (base_id or "").encode()),
    ]
    if spec.build == "script":
        assert spec.script is not None
        parts.append(("script", (repo / spec.script).read_bytes()))
        parts += [(p, _file_digest(f)) for p, f in context_files(spec, repo)]
        return _digest(parts)
    assert spec.dockerfile is not None
    parts.append(("Dockerfile", (repo / spec.dockerfile).read_bytes()))
    parts += [(p, _file_digest(f)) for p, f in context_files(spec, repo)]
    parts += [(f"file:{name}", _file_digest(extra_file(spec, src))) for name, src in spec.files]
    if spec.host_ca:
        ca = host_ca_bundle()
        parts.append(("host-ca", _file_digest(ca) if ca else b""))
    return _digest(parts)


def is_current(spec: ImageSpec, info: dict[str, Any] | None, digest: str) -> bool:
    """The image ``info`` was built from inputs hashing to ``digest``."""
    if info is None:
        return False
    recorded = labels(info).get(LABEL_INPUTS)
    if recorded is None and spec.build == "script":
        # built by the script directly (containers/base-image/build.sh): its inputs
        # cannot be checked; rebuilding it would invalidate every image on top of it.
        return True
    return recorded == digest
