"""The image registry: every image pairlab builds, with no image registry to pull from.

``containers/images.yaml`` lists each image (its tag, how it is built, what it is built
on, the inputs that make its input hash); this module reads it into :class:`ImageSpec`
rows and names tags. ``PAIRLAB_IMAGE_PREFIX`` (default ``pairlab/``) replaces the leading
``pairlab/`` of every tag: a test that needs "no image present" builds under its own
prefix and removes only those images, never the ones concurrent runs use.

The rest of the wing: ``build_inputs`` (the build context and its input hash), ``build``
(build / reuse in dependency order, ``ensure_image`` for the Docker backend's first use,
one builder per tag at a time through ``build_lock``), ``inventory`` (list, prune),
``engine`` (the engine's view of an image), ``clients`` (the real-CLI images).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import yaml

from pairlab.adapters.paths import REPO_ROOT
from pairlab.core.errors import InvalidInputError, ReasonCode

REGISTRY_FILE: Final = REPO_ROOT / "containers" / "images.yaml"
DEFAULT_PREFIX: Final = "pairlab/"
PREFIX_ENV: Final = "PAIRLAB_IMAGE_PREFIX"
LABEL_IMAGE: Final = "pairlab.image"
LABEL_INPUTS: Final = "pairlab.inputs"
LABEL_PREFIX: Final = "pairlab.prefix"
Log = Callable[[str], None]


def stderr_log(message: str) -> None:
    """The default progress log of image builds: one line on stderr."""
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
