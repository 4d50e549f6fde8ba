"""Building the registry's images: what is missing or stale, in dependency order.

:func:`build_images` builds what is missing or stale and reuses the rest: an image is
current when its ``pairlab.inputs`` label equals the hash of its inputs
(``build_inputs``), so a second build of unchanged inputs costs a ``docker image
inspect`` per image. The real-CLI images keep their own build (``clients``: wheels from
``uv.lock``, ``<repo>:<version>-<hash>`` tags) and are driven from here.

One builder per tag at a time, across processes: a build holds the tag's file lock
(``build_lock``) and checks the image again once it holds it, so a second process asking
for the same image (two xdist workers' first use of the Docker backend, or ``pairlab images build`` beside it)
waits, then reuses what the first built instead of building it twice.

Used by ``pairlab images``, the Docker backend on first use (:func:`ensure_image`),
``pairlab stack up`` and CI. Progress goes to stderr; an expected failure is a
:class:`PairlabError` (missing engine or build prerequisite: exit 3).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from pairlab.adapters.images.build_inputs import (
    context_files,
    extra_file,
    host_ca_bundle,
    input_hash,
    is_current,
)
from pairlab.adapters.images.build_lock import tag_lock
from pairlab.adapters.images.clients import build_client_image
from pairlab.adapters.images.docker_cli import run_docker
from pairlab.adapters.images.engine import inspect, require_engine
from pairlab.adapters.images.registry import (
    LABEL_IMAGE,
    LABEL_INPUTS,
    LABEL_PREFIX,
    BuildResult,
    ImageSpec,
    Log,
    image_prefix,
    load_registry,
    spec_for_tag,
    stderr_log,
)
from pairlab.adapters.paths import REPO_ROOT
from pairlab.core.errors import (
    EnvironmentUnavailable,
    ExecutionError,
    InvalidInputError,
    ReasonCode,
)


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
            shutil.copy2(extra_file(spec, src), context / name)
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


def _build_or_reuse(
    spec: ImageSpec, base_tag: str | None, base_id: str | None, force: bool, log: Log
) -> BuildResult:
    """Reuse ``spec``'s image when its label matches the input hash, else build it under the
    tag's build lock; the label is read again once the lock is held (another process may
    have built it meanwhile: then it is reused, never built twice)."""
    started = time.monotonic()
    digest = input_hash(spec, base_id)
    info = inspect(spec.local_tag)
    reused = not force and is_current(spec, info, digest)
    if not reused:
        with tag_lock(spec.local_tag, log):
            info = inspect(spec.local_tag)
            reused = not force and is_current(spec, info, digest)
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
    seconds = time.monotonic() - started
    return BuildResult(spec.name, spec.local_tag, str(info["Id"]), digest, reused, seconds)


def build_one(
    spec: ImageSpec,
    registry: dict[str, ImageSpec],
    *,
    force: bool = False,
    log: Log = stderr_log,
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
    if spec.build == "client":
        assert base_tag is not None
        result = _build_client(spec, base_tag, force, log)
    else:
        result = _build_or_reuse(spec, base_tag, base_id, force, log)
    log(f"{result.tag}: {'up to date' if result.reused else 'built'} in {result.seconds:.1f} s")
    done[spec.name] = result
    return result


def build_images(
    names: Sequence[str] = (), *, force: bool = False, log: Log = stderr_log
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


def ensure_image(tag: str, *, log: Log = stderr_log) -> str:
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
