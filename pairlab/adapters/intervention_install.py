"""Installing a ``pypi`` intervention into an environment of its own (local backend).

A manifest's ``install: {pypi: name==version, sha256: ..., lock: locks/<id>.txt}`` is
installed with uv, never into pairlab's environment:

1. The lock (``lock``, relative to the manifest's directory) must exist
   (``intervention-lock-missing``) and pin exactly the requirement: the line
   ``name==version`` with ``--hash=sha256:<install.sha256>`` among its hashes, and every
   requirement in it hashed (``intervention-lock-mismatch``). Both exit 2.
2. The environment is ``<cache>/<id>-<key>/`` where ``<cache>`` is
   ``$PAIRLAB_INTERVENTION_CACHE`` (default ``~/.cache/pairlab/interventions``) and
   ``<key>`` the first 16 hex of the sha256 of the install's inputs: the requirement,
   its sha256, the lock's bytes, the Python version and the install options. Same inputs, same directory: a
   second run reuses it and needs no network; a changed lock is a new directory.
3. Installing holds a file lock on the key (``images.build_lock.tag_lock``, as image
   builds do), so concurrent installers wait and then reuse the first one's result. It
   runs ``uv venv --python <pairlab's interpreter>`` and ``uv pip install
   --require-hashes --compile-bytecode -r <lock>`` into that directory, makes
   ``<dir>/path/`` holding only the manifest's ``command`` (a relative link into the
   environment's ``bin``) and writes a marker file last; a directory without the marker
   (a crashed install) is removed and installed again. A finished install from before
   ``path/`` existed gets it, under the same lock, and is otherwise reused.
4. Any failure (no ``uv``, a resolver or download error, a hash mismatch, the
   manifest's ``command`` not a bare file name or missing from the environment's ``bin``)
   is ``intervention-install-failed`` (exit 1), raised before any episode runs.

:func:`install_for_backend` returns the profile whose treated arms get that ``path/``
first on PATH (``treatment.path_prepend``, read by both backends) -- the command alone,
not the environment's ``bin``: there the agent's own ``python3``, ``python`` and ``pip``
would resolve to the intervention's environment, which the baseline's do not.
On Docker the environment is not this cache but ``/opt/interventions/<id>`` inside an image
derived from the profile's client image, built on first use and cached by input hash like
every other image (``images.intervention_images``, where the choice that the baseline runs
in that same image is explained); the lock is checked the same way first, and a failed
build is ``intervention-install-failed`` too.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Final

from pairlab.adapters.images.build_lock import tag_lock
from pairlab.adapters.images.registry import Log
from pairlab.adapters.interventions import PYPI_COMMAND, PYPI_PATH_DIR, LoadedIntervention
from pairlab.core.errors import ExecutionError, InvalidInputError, ReasonCode
from pairlab.core.schemas.profile import RunnerProfile

CACHE_ENV: Final = "PAIRLAB_INTERVENTION_CACHE"
MARKER: Final = ".pairlab-installed.json"
UV_TIMEOUT_S: Final = 900.0
# bytecode compiled at install: an episode writes no .pyc into the shared environment
# and its server starts without compiling
PIP_INSTALL: Final = ("pip", "install", "--quiet", "--require-hashes", "--compile-bytecode")
_REQUIREMENT_LINE = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(?P<ver>\S+)"
)
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


def stderr_log(message: str) -> None:
    """The default progress log of an install: one line on stderr."""
    print(f"interventions: {message}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "pairlab" / "interventions"


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_file(loaded: LoadedIntervention) -> Path:
    """The manifest's lock, checked to exist (``intervention-lock-missing``)."""
    install = loaded.manifest.install
    if install.lock is None:
        raise InvalidInputError(
            f"intervention '{loaded.manifest.id}': install.lock is required to install "
            f"{install.pypi} (a fully hashed requirements file beside the manifest, e.g. "
            f"`uv pip compile --generate-hashes` into locks/{loaded.manifest.id}.txt)",
            reason=ReasonCode.INTERVENTION_LOCK_MISSING,
        )
    path = loaded.path.parent / install.lock
    if not path.is_file():
        raise InvalidInputError(
            f"intervention '{loaded.manifest.id}': install.lock {path} not found",
            reason=ReasonCode.INTERVENTION_LOCK_MISSING,
        )
    return path


def _lock_entries(text: str) -> dict[str, tuple[str, set[str]]]:
    """Each requirement of a ``--generate-hashes`` lock: normalized name -> (version, hashes)."""
    entries: dict[str, tuple[str, set[str]]] = {}
    current: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        found = _REQUIREMENT_LINE.match(line)
        if found and not raw[:1].isspace():
            current = _normalize(found.group("name"))
            entries[current] = (found.group("ver").rstrip("\\ ").strip(), set())
        if current is not None:
            entries[current][1].update(_HASH.findall(line))
    return entries


def check_lock(loaded: LoadedIntervention, text: str) -> None:
    """Refuse a lock that does not pin the manifest's requirement with its sha256, or that
    holds an unhashed requirement (``intervention-lock-mismatch``)."""
    install = loaded.manifest.install
    name, version = _normalize(install.package or ""), install.pinned_version
    entries = _lock_entries(text)
    where = f"intervention '{loaded.manifest.id}': lock {install.lock}"
    if name not in entries or entries[name][0] != version:
        pinned = entries.get(name, ("none", set()))[0]
        raise InvalidInputError(
            f"{where} pins {install.package}=={pinned}, the manifest {install.pypi}",
            reason=ReasonCode.INTERVENTION_LOCK_MISMATCH,
        )
    if install.sha256 not in entries[name][1]:
        raise InvalidInputError(
            f"{where} has no --hash=sha256:{install.sha256} for {install.pypi} (the "
            "manifest's install.sha256)",
            reason=ReasonCode.INTERVENTION_LOCK_MISMATCH,
        )
    unhashed = sorted(n for n, (_, hashes) in entries.items() if not hashes)
    if unhashed:
        raise InvalidInputError(
            f"{where}: requirements without a hash: {', '.join(unhashed)}",
            reason=ReasonCode.INTERVENTION_LOCK_MISMATCH,
        )


def install_key(loaded: LoadedIntervention, lock_bytes: bytes) -> str:
    """16 hex of the sha256 of everything the environment is made from."""
    inputs = {
        "pypi": loaded.manifest.install.pypi,
        "sha256": loaded.manifest.install.sha256,
        "lock": hashlib.sha256(lock_bytes).hexdigest(),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "uv": " ".join(PIP_INSTALL),
    }
    blob = json.dumps(inputs, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def environment_dir(loaded: LoadedIntervention) -> Path:
    """Where the intervention's environment is (or will be), its lock checked first."""
    path = lock_file(loaded)
    data = path.read_bytes()
    check_lock(loaded, data.decode("utf-8", errors="replace"))
    return cache_root() / f"{loaded.manifest.id}-{install_key(loaded, data)}"


def _failed(loaded: LoadedIntervention, what: str) -> ExecutionError:
    return ExecutionError(
        f"intervention '{loaded.manifest.id}' ({loaded.manifest.install.pypi}): install "
        f"failed: {what}",
        reason=ReasonCode.INTERVENTION_INSTALL_FAILED,
    )


def _uv(loaded: LoadedIntervention, uv: str, args: list[str], cwd: Path) -> None:
    env = {
        k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT"}
    }
    try:
        done = subprocess.run(
            [uv, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=UV_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise _failed(loaded, f"uv {args[0]}: {exc}") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
        raise _failed(loaded, f"uv {' '.join(args[:2])} exited {done.returncode}:\n{tail}")


def _path_ready(path_dir: Path, command: str) -> bool:
    return path_dir.is_dir() and [p.name for p in path_dir.iterdir()] == [command]


def _make_path_dir(target: Path, command: str) -> None:
    """``<target>/path/`` holding only ``command``, a relative link into ``bin``; made
    beside and renamed into place, so a reader sees none or the whole of it (held under the
    install's lock)."""
    path_dir = target / PYPI_PATH_DIR
    shutil.rmtree(path_dir, ignore_errors=True)
    staging = target / f".{PYPI_PATH_DIR}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    (staging / command).symlink_to(Path("..", "bin", command))
    staging.rename(path_dir)


def ensure_installed(loaded: LoadedIntervention, *, log: Log = stderr_log) -> Path:
    """The treated arms' PATH head: ``<environment>/path``, holding only the manifest's
    command (a link into the environment's ``bin``), the environment installed if needed."""
    manifest = loaded.manifest
    if manifest.install.pypi is None:
        raise ValueError(f"intervention '{manifest.id}' is a module install")  # a bug
    if not PYPI_COMMAND.match(manifest.command):
        raise _failed(
            loaded,
            f"the command {manifest.command!r} is not a file name its environment's bin can hold",
        )
    target = environment_dir(loaded)
    bin_dir, path_dir = target / "bin", target / PYPI_PATH_DIR
    if (target / MARKER).is_file() and _path_ready(path_dir, manifest.command):
        return path_dir
    uv = shutil.which("uv")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tag_lock(f"intervention-{target.name}", log):
        if (target / MARKER).is_file():
            # another installer finished while we waited, or an install from before path/
            if not _path_ready(path_dir, manifest.command):
                _make_path_dir(target, manifest.command)
            return path_dir
        if uv is None:
            raise _failed(loaded, "no `uv` on PATH (https://docs.astral.sh/uv/)")
        shutil.rmtree(target, ignore_errors=True)  # a crashed install leaves no marker
        log(f"installing {manifest.install.pypi} into {target}")
        lock = lock_file(loaded).resolve()
        _uv(loaded, uv, ["venv", "--quiet", "--python", sys.executable, str(target)], target.parent)
        python = str(bin_dir / "python")
        _uv(
            loaded,
            uv,
            [*PIP_INSTALL, "--python", python, "-r", str(lock)],
            target.parent,
        )
        if not (bin_dir / manifest.command).is_file():
            shutil.rmtree(target, ignore_errors=True)
            raise _failed(loaded, f"the command '{manifest.command}' is not in {bin_dir}")
        _make_path_dir(target, manifest.command)
        record = {"pypi": manifest.install.pypi, "sha256": manifest.install.sha256}
        (target / MARKER).write_text(json.dumps({**record, "lock": str(lock)}) + "\n")
    return path_dir


def install_for_backend(
    profile: RunnerProfile, loaded: LoadedIntervention, backend_name: str, *, log: Log = stderr_log
) -> RunnerProfile:
    """``profile`` ready to run ``loaded`` on ``backend_name``: a module intervention as
    it is; a pypi one installed, a directory holding only its command (a link into its
    environment's ``bin``) first on the treated arms' PATH -- on Docker, in the derived
    image that then is the profile's image for every arm."""
    if loaded.manifest.install.pypi is None:
        return profile
    if backend_name == "docker":
        # imported here: the Docker SDK only when the Docker backend is asked for
        from pairlab.adapters.images.intervention_images import bin_dir as intervention_path_dir
        from pairlab.adapters.images.intervention_images import ensure_intervention_image

        check_lock(loaded, lock_file(loaded).read_text(encoding="utf-8", errors="replace"))
        image = ensure_intervention_image(profile.image, loaded, log=log)
        treatment = profile.treatment.model_copy(
            update={"path_prepend": [intervention_path_dir(loaded.manifest.id)]}
        )
        return profile.model_copy(update={"image": image.tag, "treatment": treatment})
    if backend_name != "local":
        raise ExecutionError(
            f"intervention '{loaded.manifest.id}' ({loaded.manifest.install.pypi}): a pypi "
            f"intervention is installed for the local and docker backends, not {backend_name}",
            reason=ReasonCode.INTERVENTION_INSTALL_FAILED,
        )
    path_dir = ensure_installed(loaded, log=log)
    treatment = profile.treatment.model_copy(update={"path_prepend": [str(path_dir)]})
    return profile.model_copy(update={"treatment": treatment})


__all__ = [
    "CACHE_ENV",
    "cache_root",
    "check_lock",
    "ensure_installed",
    "environment_dir",
    "install_for_backend",
    "install_key",
    "lock_file",
]
