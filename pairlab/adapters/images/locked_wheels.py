"""Wheel files exactly as ``uv.lock`` pins them, fetched once into a local cache and verified.

The client images carry the same wheels as the lock (the real CLIs and what the
reference intervention needs). A container here reaches PyPI only through a
TLS-intercepting proxy whose CA lives in the host's bundle, so images never
download anything: the host fetches each wheel by the URL the lock names (with
the host's CA configuration, as ``uv`` does), checks the lock's SHA-256, and
the Docker build only copies the verified files (containers/README.md).

Cache: ``$PAIRLAB_WHEEL_CACHE``, else ``$XDG_CACHE_HOME/pairlab/wheels``, else
``~/.cache/pairlab/wheels``. A cached file is re-verified on every use; a file
that does not match the lock is replaced, never used.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import tempfile
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pairlab.core.errors import EnvironmentUnavailable, InvalidInputError, ReasonCode

CACHE_ENV: Final = "PAIRLAB_WHEEL_CACHE"
# Debian bookworm (the base image): CPython 3.11, glibc 2.36.
DEFAULT_PYTHON: Final = (3, 11)
DEFAULT_GLIBC: Final = (2, 36)
_LEGACY_MANYLINUX: Final = {
    "manylinux1": (2, 5),
    "manylinux2010": (2, 12),
    "manylinux2014": (2, 17),
}
_WHEEL_NAME = re.compile(
    r"^(?P<dist>[^-]+)-(?P<version>[^-]+)(?:-(?P<build>\d[^-]*))?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$"
)
_CHUNK: Final = 1 << 20


@dataclass(frozen=True)
class LockedWheel:
    name: str
    version: str
    filename: str
    url: str
    sha256: str
    size: int | None


def machine() -> str:
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(
        platform.machine().lower(), platform.machine()
    )


def _platform_ok(plat: str, arch: str, glibc: tuple[int, int]) -> bool:
    for tag in plat.split("."):
        if tag == "any":
            return True
        if not tag.endswith("_" + arch):
            continue
        family = tag.removesuffix("_" + arch)
        if family in _LEGACY_MANYLINUX and _LEGACY_MANYLINUX[family] <= glibc:
            return True
        match = re.fullmatch(r"manylinux_(\d+)_(\d+)", family)
        if match and (int(match[1]), int(match[2])) <= glibc:
            return True
    return False


def _python_rank(py: str, abi: str, python: tuple[int, int]) -> int | None:
    """How specific a compatible (python, abi) tag pair is (higher is better); None: incompatible."""
    exact = f"cp{python[0]}{python[1]}"
    for tag in py.split("."):
        if tag == exact and abi in (exact, "abi3", "none"):
            return 3
        if abi == "abi3" and tag.startswith(f"cp{python[0]}") and int(tag[3:] or 0) <= python[1]:
            return 2
        if tag in (f"py{python[0]}", f"py{python[0]}{python[1]}") and abi == "none":
            return 1
    return None


def select_wheel(
    package: dict[str, Any],
    *,
    python: tuple[int, int] = DEFAULT_PYTHON,
    arch: str | None = None,
    glibc: tuple[int, int] = DEFAULT_GLIBC,
) -> LockedWheel:
    """The most specific wheel of a lock entry that installs on (python, Linux arch, glibc)."""
    arch = arch or machine()
    ranked: list[tuple[int, LockedWheel]] = []
    for wheel in package.get("wheels", []):
        filename = str(wheel["url"]).rsplit("/", 1)[-1]
        parsed = _WHEEL_NAME.match(filename)
        if parsed is None or not _platform_ok(parsed["plat"], arch, glibc):
            continue
        rank = _python_rank(parsed["py"], parsed["abi"], python)
        if rank is None:
            continue
        algorithm, _, digest = str(wheel["hash"]).partition(":")
        if algorithm != "sha256":
            continue
        size = wheel.get("size")
        ranked.append(
            (
                rank,
                LockedWheel(
                    package["name"],
                    package["version"],
                    filename,
                    wheel["url"],
                    digest,
                    size if isinstance(size, int) else None,
                ),
            )
        )
    if not ranked:
        raise InvalidInputError(
            f"uv.lock has no wheel of {package['name']} {package['version']} for CPython "
            f"{python[0]}.{python[1]} on Linux {arch} (glibc {glibc[0]}.{glibc[1]})",
            reason=ReasonCode.NOT_FOUND,
        )
    ranked.sort(key=lambda item: -item[0])
    return ranked[0][1]


def locked_wheel(lock_path: Path, name: str, **target: Any) -> LockedWheel:
    """The wheel of package ``name`` that ``lock_path`` (a uv.lock) pins for the target."""
    try:
        lock = tomllib.loads(lock_path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInputError(
            f"cannot read {lock_path}: {exc}", reason=ReasonCode.INPUT_READ_FAILED
        ) from exc
    entries = [p for p in lock.get("package", []) if p.get("name") == name]
    if len(entries) != 1:
        raise InvalidInputError(
            f"{lock_path} pins {len(entries)} versions of {name}; expected exactly one",
            reason=ReasonCode.NOT_FOUND,
        )
    return select_wheel(entries[0], **target)


def wheel_cache_dir() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pairlab" / "wheels"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_wheel(
    wheel: LockedWheel,
    cache_dir: Path | None = None,
    *,
    log: Callable[[str], None] = lambda _m: None,
    timeout_s: float = 120.0,
) -> Path:
    """The verified wheel file in the cache, downloaded by the lock's URL when missing."""
    cache = cache_dir or wheel_cache_dir()
    path = cache / wheel.filename
    if path.is_file():
        if file_sha256(path) == wheel.sha256:
            return path
        log(f"{wheel.filename}: cached file does not match uv.lock; fetching it again")
    cache.mkdir(parents=True, exist_ok=True)
    log(f"fetching {wheel.filename} ({(wheel.size or 0) / 1e6:.0f} MB) from {wheel.url}")
    fd, partial = tempfile.mkstemp(dir=cache, prefix=".partial-")
    digest = hashlib.sha256()
    try:
        with (
            os.fdopen(fd, "wb") as out,
            urllib.request.urlopen(wheel.url, timeout=timeout_s) as response,
        ):
            while chunk := response.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != wheel.sha256:
            raise InvalidInputError(
                f"{wheel.url}: SHA-256 {digest.hexdigest()} is not the one uv.lock pins ({wheel.sha256})",
                reason=ReasonCode.INTEGRITY_FAILED,
            )
        os.replace(partial, path)
    except (urllib.error.URLError, OSError) as exc:
        raise EnvironmentUnavailable(
            f"cannot fetch {wheel.url}: {exc}", reason=ReasonCode.ENVIRONMENT_UNAVAILABLE
        ) from exc
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return path


def place_file(source: Path, dest: Path) -> None:
    """A hard link when possible (same filesystem; wheels are large), else a copy."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)
