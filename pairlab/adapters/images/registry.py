"""The image registry: every image pairlab builds, with no image registry to pull from.

``containers/images.yaml`` lists each image (its tag, how it is built, what it is built
on, the inputs that make its input hash). :func:`build_images` builds what is missing or
stale in dependency order and reuses the rest: an image is current when its
``pairlab.inputs`` label equals the hash of its inputs (the context files, the
Dockerfile, the build args and the base image's id), so a second build of unchanged
inputs costs a ``docker image inspect`` per image. The real-CLI images keep their own
build (``client_images``: wheels from ``uv.lock``, ``<repo>:<version>-<hash>`` tags)
and are driven from here.

``PAIRLAB_IMAGE_PREFIX`` (default ``pairlab/``) replaces the leading ``pairlab/`` of
every tag: a test that needs "no image present" builds under its own prefix and removes
only those images, never the ones concurrent runs use.

Used by ``pairlab images``, the Docker backend on first use (:func:`ensure_image`),
``pairlab stack up`` and CI. Progress goes to stderr; an expected failure is a
:class:`PairlabError` (missing engine or build prerequisite: exit 3).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import docker.errors
import yaml

from pairlab.adapters.docker_engine import connect
from pairlab.adapters.images.clients import build_client_image
from pairlab.adapters.images.docker_cli import run_docker
from pairlab.adapters.paths import REPO_ROOT
from pairlab.core.errors import (
    EnvironmentUnavailable,
    ExecutionError,
    InvalidInputError,
    ReasonCode,
)

REGISTRY_FILE: Final = REPO_ROOT / "containers" / "images.yaml"
DEFAULT_PREFIX: Final = "pairlab/"
PREFIX_ENV: Final = "PAIRLAB_IMAGE_PREFIX"
LABEL_IMAGE: Final = "pairlab.image"
LABEL_INPUTS: Final = "pairlab.inputs"
LABEL_PREFIX: Final = "pairlab.prefix"
HOST_CA_CANDIDATES: Final = (
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
)
Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(f"images: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class ImageSpec:
    name: str
    tag: str  # as written in the registry (pairlab/...)
    build: Literal["script", "dockerfile", "client"]
    base: str | None = None
    script: str | None = None
    dockerfile: str | None = None
    context_root: str = "."
    inputs: tuple[str, ...] = ()
    files: tuple[tuple[str, str], ...] = ()
    host_ca: bool = False
    needs: tuple[str, ...] = ()

    @property
    def local_tag(self) -> str:
        return local_tag(self.tag)


@dataclass
class BuildResult:
    name: str
    tag: str
    image_id: str
    input_hash: str | None
    reused: bool
    seconds: float
    extra_tags: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "tag": self.tag,
            "image_id": self.image_id,
            "input_hash": self.input_hash,
            "reused": self.reused,
            "seconds": round(self.seconds, 2),
            "extra_tags": self.extra_tags,
        }


def image_prefix() -> str:
    prefix = os.environ.get(PREFIX_ENV, "") or DEFAULT_PREFIX
    if not prefix.endswith("/") or prefix.count("/") != 1 or prefix != prefix.lower():
        raise InvalidInputError(
            f"{PREFIX_ENV} must look like 'name/' in lower case (got {prefix!r})",
            reason=ReasonCode.INVALID_INPUT,
        )
    return prefix


def local_tag(tag: str) -> str:
    """``tag`` under this process's prefix (``pairlab/x:y`` -> ``<prefix>x:y``)."""
    if tag.startswith(DEFAULT_PREFIX):
        return image_prefix() + tag[len(DEFAULT_PREFIX) :]
    return tag


def load_registry(path: Path = REGISTRY_FILE) -> dict[str, ImageSpec]:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidInputError(
            f"{path}: cannot read the image registry: {exc}", reason=ReasonCode.MALFORMED_INPUT
        ) from exc
    specs: dict[str, ImageSpec] = {}
    for row in raw.get("images", []):
        spec = ImageSpec(
            name=row["name"],
            tag=row["tag"],
            build=row["build"],
            base=row.get("base"),
            script=row.get("script"),
            dockerfile=row.get("dockerfile"),
            context_root=row.get("context_root", "."),
            inputs=tuple(row.get("inputs") or ()),
            files=tuple(sorted((row.get("files") or {}).items())),
            host_ca=bool(row.get("host_ca", False)),
            needs=tuple(row.get("needs") or ()),
        )
        if spec.base is not None and spec.base not in specs:
            raise InvalidInputError(
                f"{path}: image {spec.name} is built on {spec.base}, which must come first",
                reason=ReasonCode.MALFORMED_INPUT,
            )
        specs[spec.name] = spec
    return specs


# --- docker helpers ------------------------------------------------------------------


def require_engine() -> None:
    """The engine answers (exit 3, docker-unavailable, when it does not)."""
    connect().close()


_client_lock = threading.Lock()
_sdk_client: Any = None


def inspect(tag: str) -> dict[str, Any] | None:
    """``docker image inspect`` through the engine's API (no docker CLI needed: a worker
    container that only has the mounted socket checks its images the same way)."""
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


def _labels(info: dict[str, Any] | None) -> dict[str, str]:
    if info is None:
        return {}
    return dict((info.get("Config") or {}).get("Labels") or {})


# --- input hashes ----------------------------------------------------------------------


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


def _extra_file(spec: ImageSpec, source: str) -> Path:
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
    parts += [(f"file:{name}", _file_digest(_extra_file(spec, src))) for name, src in spec.files]
    if spec.host_ca:
        ca = host_ca_bundle()
        parts.append(("host-ca", _file_digest(ca) if ca else b""))
    return _digest(parts)


# --- builds -------------------------------------------------------------------------------


def _require_commands(spec: ImageSpec) -> None:
    for command in spec.needs:
        if shutil.which(command) is None:
            raise EnvironmentUnavailable(
                f"building image {spec.name} needs '{command}' on this machine "
                f"(Debian/Ubuntu: apt-get install -y {command})",
                reason=ReasonCode.BUILD_PREREQUISITE_MISSING,
            )


def _build_script(spec: ImageSpec, digest: str, log: Log) -> None:
    assert spec.script is not None
    _require_commands(spec)
    env = {
        **os.environ,
        "PAIRLAB_IMAGE_LABELS": f"{LABEL_IMAGE}={spec.name} {LABEL_INPUTS}={digest}",
    }
    log(f"building {spec.local_tag} ({spec.script})")
    result = subprocess.run(
        ["bash", str(REPO_ROOT / spec.script), "--force", "--tag", spec.local_tag],
        stdout=subprocess.PIPE,
        stderr=sys.stderr,
        text=True,
        env=env,
        check=False,
    )
    if result.returncode == 3:
        raise EnvironmentUnavailable(
            f"image {spec.name}: {spec.script} reports a missing prerequisite (see above)",
            reason=ReasonCode.BUILD_PREREQUISITE_MISSING,
        )
    if result.returncode != 0:
        raise ExecutionError(
            f"image {spec.name}: {spec.script} exited {result.returncode}",
            reason=ReasonCode.EXECUTION_FAILED,
        )


def _build_dockerfile(spec: ImageSpec, digest: str, base_tag: str | None, log: Log) -> None:
    assert spec.dockerfile is not None
    with tempfile.TemporaryDirectory(prefix=f"pairlab-{spec.name}-context-") as tmp:
        context = Path(tmp)
        for rel, source in context_files(spec):
            target = context / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        for name, src in spec.files:
            shutil.copy2(_extra_file(spec, src), context / name)
        if spec.host_ca:
            ca = host_ca_bundle()
            (context / "host-ca.crt").write_bytes(ca.read_bytes() if ca else b"")
        shutil.copy2(REPO_ROOT / spec.dockerfile, context / "Dockerfile")
        args = ["build", "--pull=false", "-f", str(context / "Dockerfile"), "-t", spec.local_tag]
        if base_tag is not None:
            args += ["--build-arg", f"BASE_IMAGE={base_tag}"]
        args += ["--label", f"{LABEL_IMAGE}={spec.name}", "--label", f"{LABEL_INPUTS}={digest}"]
        args += ["--label", f"{LABEL_PREFIX}={image_prefix()}", str(context)]
        log(
            f"building {spec.local_tag} on {base_tag or 'its default base'} ({len(list(context.rglob('*')))} context files)"
        )
        result = run_docker(args, stream=True)
    if result.returncode != 0:
        raise ExecutionError(
            f"image {spec.name}: docker build failed (exit {result.returncode}; output above)",
            reason=ReasonCode.EXECUTION_FAILED,
        )


def _build_client(spec: ImageSpec, base_tag: str, force: bool, log: Log) -> BuildResult:
    repository = spec.local_tag.split(":", 1)[0]
    built = build_client_image(
        spec.name, base_image=base_tag, force=force, log=log, repository=repository
    )
    if built.alias != spec.local_tag:
        raise InvalidInputError(
            f"the lock builds {built.alias} but containers/images.yaml names {spec.local_tag}: "
            "update the registry (and the runner profile)",
            reason=ReasonCode.INVALID_PROFILE,
        )
    info = inspect(built.tag)
    return BuildResult(
        spec.name,
        built.alias,
        str((info or {}).get("Id", "")),
        built.input_hash,
        built.reused,
        built.seconds,
        [built.tag],
    )


def _is_current(spec: ImageSpec, info: dict[str, Any] | None, digest: str) -> bool:
    if info is None:
        return False
    recorded = _labels(info).get(LABEL_INPUTS)
    if recorded is None and spec.build == "script":
        # built by the script directly (containers/base-image/build.sh): its inputs
        # cannot be checked; rebuilding it would invalidate every image on top of it.
        return True
    return recorded == digest


def build_one(
    spec: ImageSpec,
    registry: dict[str, ImageSpec],
    *,
    force: bool = False,
    log: Log = _stderr,
    built: dict[str, BuildResult] | None = None,
) -> BuildResult:
    done = built if built is not None else {}
    if spec.name in done:
        return done[spec.name]
    base_tag: str | None = None
    base_id: str | None = None
    if spec.base is not None:
        base = build_one(registry[spec.base], registry, force=False, log=log, built=done)
        base_tag, base_id = base.tag, base.image_id
    started = time.monotonic()
    if spec.build == "client":
        assert base_tag is not None
        result = _build_client(spec, base_tag, force, log)
    else:
        digest = input_hash(spec, base_id)
        info = inspect(spec.local_tag)
        reused = not force and _is_current(spec, info, digest)
        if not reused:
            if spec.build == "script":
                _build_script(spec, digest, log)
            else:
                _build_dockerfile(spec, digest, base_tag, log)
            info = inspect(spec.local_tag)
            if info is None:
                raise ExecutionError(
                    f"image {spec.name}: the build finished but {spec.local_tag} is absent",
                    reason=ReasonCode.EXECUTION_FAILED,
                )
        result = BuildResult(
            spec.name,
            spec.local_tag,
            str(info["Id"]) if info else "",
            digest,
            reused,
            time.monotonic() - started,
        )
    log(f"{result.tag}: {'up to date' if result.reused else 'built'} in {result.seconds:.1f} s")
    done[spec.name] = result
    return result


def build_images(
    names: Sequence[str] = (), *, force: bool = False, log: Log = _stderr
) -> list[BuildResult]:
    """Build ``names`` (default: all) and what they are built on; reuse what is current."""
    registry = load_registry()
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise InvalidInputError(
            f"unknown image(s) {', '.join(unknown)} (known: {', '.join(registry)})",
            reason=ReasonCode.INVALID_INPUT,
        )
    require_engine()
    done: dict[str, BuildResult] = {}
    wanted = list(names) or list(registry)
    return [build_one(registry[n], registry, force=force, log=log, built=done) for n in wanted]


# --- the Docker backend's first use ------------------------------------------------------

_ensured: dict[str, str] = {}
_ensure_lock = threading.Lock()


def spec_for_tag(tag: str, registry: dict[str, ImageSpec] | None = None) -> ImageSpec | None:
    """The registry image a profile's tag names (``pairlab/x:y`` or ``<prefix>x:y``, or a
    client image's ``<repo>:<version>-<hash>``)."""
    specs = registry if registry is not None else load_registry()
    for spec in specs.values():
        if tag in (spec.tag, spec.local_tag):
            return spec
        if spec.build == "client" and tag.startswith(spec.local_tag + "-"):
            return spec
    return None


def ensure_image(tag: str, *, log: Log = _stderr) -> str:
    """The local tag to run for a profile's ``tag``: built (with what it is built on) when
    absent or stale, once per process; an image the registry does not know must be present."""
    with _ensure_lock:
        if tag in _ensured:
            return _ensured[tag]
        spec = spec_for_tag(tag)
        if spec is None:
            if inspect(tag) is None:
                require_engine()
                raise EnvironmentUnavailable(
                    f"image {tag} is not present and containers/images.yaml does not list it",
                    reason=ReasonCode.NOT_FOUND,
                )
            _ensured[tag] = tag
            return tag
        resolved = spec.build == "client" and tag not in (spec.tag, spec.local_tag)
        if resolved and inspect(tag) is not None:  # an immutable hash tag already resolved
            _ensured[tag] = tag
            return tag
        registry = load_registry()
        try:
            result = build_one(spec, registry, log=log)
        except (EnvironmentUnavailable, OSError) as exc:
            # Inputs or tools this process cannot reach (a worker container has the image
            # registry and the socket, not the docker CLI or the wheel cache): an image
            # already present is used as named, with a warning; a missing engine never.
            reason = getattr(exc, "reason", None)
            if reason == ReasonCode.DOCKER_UNAVAILABLE and shutil.which("docker"):
                raise
            if inspect(spec.local_tag) is None:
                raise
            log(f"using the present {spec.local_tag} unchecked ({exc})")
            _ensured[tag] = spec.local_tag
            return spec.local_tag
        chosen = result.extra_tags[0] if result.extra_tags else result.tag
        _ensured[tag] = chosen
        return chosen


# --- list / prune ----------------------------------------------------------------------------


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
            "inputs": _labels(info).get(LABEL_INPUTS),
        }
        if info is not None and spec.build != "client":
            base_id = ids.get(spec.base) if spec.base else None
            try:
                row["current"] = _is_current(spec, info, input_hash(spec, base_id))
            except EnvironmentUnavailable:
                row["current"] = None  # an input (the Garage binary) is absent: unknown
        ids[spec.name] = str((info or {}).get("Id", ""))
        rows.append(row)
    return rows


def prune(*, dry_run: bool = False, log: Log = _stderr) -> list[str]:
    """Remove pairlab images under this prefix that no registry tag points at any more
    (superseded input-hash builds, build stages); the current images stay."""
    registry = load_registry()
    require_engine()
    keep = {
        str(info["Id"])
        for spec in registry.values()
        if (info := inspect(spec.local_tag)) is not None
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
        if ref == "<none>:<none>" and _labels(full).get(LABEL_PREFIX, DEFAULT_PREFIX) != prefix:
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
