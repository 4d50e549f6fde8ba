"""Credentials an episode's CLI reads from files in its HOME, and the Docker backend's
secret mount.

A *secret file* (a ChatGPT login's ``auth.json`` in ``CODEX_HOME``) is given to a backend
as ``{path relative to the episode HOME: content}``. The rules both backends keep:

* it is written for the episode only (mode 600) and removed when the CLI has ended,
  before anything is collected; collection drops it in any case (a CLI killed before
  its wrapper could remove it), so no collected HOME, record or transcript holds it;
* a record names it (``PreparedEpisode.secret_names``: ``$HOME/<path>``), never its content.

On Docker no secret reaches the container's configuration (``docker inspect`` shows its
``Config.Env``, ``Config.Cmd`` and labels): each secret variable and secret file is
written into a private host directory (mode 700, owned by the container's user) that is
bind-mounted read-only at :data:`SECRET_MOUNT` for that episode only, and the container's
command is a ``/bin/sh`` wrapper (:func:`wrapped_command`) that reads the variables into
the CLI's environment and copies the files into HOME, then runs the CLI (``exec`` when
there are no files; else as a child, forwarding SIGTERM, and removes the files after it).
The host directory is removed as soon as the container has stopped.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from pairlab.core.errors import ExecutionError, ReasonCode

SECRET_MOUNT = "/run/pairlab-secrets"
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def checked_relative(path: str) -> str:
    """A secret file's path: relative, inside HOME."""
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        raise ExecutionError(
            f"secret file {path!r} must be a relative path inside the episode HOME",
            reason=ReasonCode.INVALID_INPUT,
        )
    return pure.as_posix()


def secret_file_names(files: Mapping[str, str]) -> list[str]:
    """How a record names the secret files: ``$HOME/<path>``."""
    return [f"$HOME/{checked_relative(p)}" for p in files]


def write_home_files(home: Path, files: Mapping[str, str]) -> None:
    """Write the secret files into an episode HOME on this host (mode 600)."""
    for rel, content in files.items():
        target = home / checked_relative(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(content)


def remove_home_files(home: Path, files: Mapping[str, str]) -> None:
    """Remove the secret files from an episode HOME (or a collected copy of it)."""
    for rel in files:
        (home / checked_relative(rel)).unlink(missing_ok=True)


def write_secret_dir(
    variables: Mapping[str, str], files: Mapping[str, str], owner: tuple[int, int]
) -> Path:
    """The private host directory mounted at :data:`SECRET_MOUNT`: ``env/<NAME>`` and
    ``files/<n>``, readable by the container's user only."""
    root = Path(tempfile.mkdtemp(prefix="pairlab-secrets-"))
    try:
        for sub in ("env", "files"):
            (root / sub).mkdir()
        for name, value in variables.items():
            if not _VARIABLE.match(name):
                raise ExecutionError(f"secret {name!r} is not a variable name")
            _write_private(root / "env" / name, value)
        for index, content in enumerate(files.values()):
            _write_private(root / "files" / str(index), content)
        if os.geteuid() == 0:
            for path in [root, *root.rglob("*")]:
                os.chown(path, *owner, follow_symlinks=False)
        elif os.geteuid() != owner[0]:
            # another user runs the container: it must be able to read what it is given
            for path in [root, *root.rglob("*")]:
                path.chmod(0o755 if path.is_dir() else 0o644)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return root


def _write_private(path: Path, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(value)


def wrapped_command(argv: list[str], variables: list[str], files: Mapping[str, str]) -> list[str]:
    """``/bin/sh -c SCRIPT pairlab-secrets ARGV...``: the secrets read from the mount, then
    the CLI (see the module doc). The script holds names and paths, never a value."""
    lines = ["set -e"]
    for name in variables:
        lines.append(f'{name}="$(cat {SECRET_MOUNT}/env/{name})"; export {name}')
    if not files:
        lines.append('exec "$@"')
    else:
        homes = [f'"$HOME"/{shlex.quote(checked_relative(rel))}' for rel in files]
        for index, target in enumerate(homes):
            lines.append(
                f'mkdir -p "$(dirname {target})"; cp {SECRET_MOUNT}/files/{index} {target}'
            )
            lines.append(f"chmod 600 {target}")
        lines += [
            "set +e",
            "trap 'kill -TERM \"$child\" 2>/dev/null' TERM INT",
            '"$@" & child=$!',
            'wait "$child"; rc=$?',
            'while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done',
            f"rm -f {' '.join(homes)}",
            'exit "$rc"',
        ]
    return ["/bin/sh", "-c", "\n".join(lines), "pairlab-secrets", *argv]


__all__ = [
    "SECRET_MOUNT",
    "checked_relative",
    "remove_home_files",
    "secret_file_names",
    "wrapped_command",
    "write_home_files",
    "write_secret_dir",
]
