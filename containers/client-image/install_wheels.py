"""Install verified wheels into an image by extraction: no pip, no network (stdlib only).

    python3 install_wheels.py MANIFEST.json ROOT

MANIFEST (written by pairlab/adapters/images/clients.py) lists each wheel file
(relative to the manifest), the SHA-256 that uv.lock pins for it, the CPython
tag it needs (or null), the directory to extract it into, and optionally which
member prefixes to keep (e.g. only the CLI binary of a large SDK wheel). Every
file is verified before anything is extracted; executable bits recorded in the
wheel are kept; ``<dist>.data/{purelib,platlib}/`` members land in the
destination like the package itself. Exit 1 with a message on any mismatch.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import zipfile


def fail(message: str) -> None:
    print(f"install_wheels: {message}", file=sys.stderr)
    sys.exit(1)


def sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def target_name(name: str) -> str | None:
    """Where a wheel member goes, relative to the destination (None: not installed)."""
    first, _, rest = name.partition("/")
    if first.endswith(".data"):
        scheme, _, inner = rest.partition("/")
        return inner if scheme in ("purelib", "platlib") and inner else None
    return name


def extract(wheel: str, dest: str, members: list[str] | None) -> int:
    count = 0
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            name = info.filename
            if members and not any(name.startswith(prefix) for prefix in members):
                continue
            relative = target_name(name)
            if relative is None or name.endswith("/"):
                continue
            if relative.startswith("/") or ".." in relative.split("/"):
                fail(f"{wheel}: unsafe member name {name!r}")
            target = os.path.join(dest, relative)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with archive.open(info) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
            mode = (info.external_attr >> 16) & 0o777
            os.chmod(target, 0o755 if mode & 0o111 else 0o644)
            count += 1
    return count


def main(argv: list[str]) -> None:
    if len(argv) != 3:
        fail("usage: install_wheels.py MANIFEST.json ROOT")
    manifest_path, root = argv[1], argv[2]
    with open(manifest_path, encoding="utf-8") as handle:
        manifest = json.load(handle)
    base = os.path.dirname(os.path.abspath(manifest_path))
    here = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    wheels = manifest["wheels"]
    for entry in wheels:  # verify everything before extracting anything
        path = os.path.join(base, entry["file"])
        if sha256(path) != entry["sha256"]:
            fail(f"{entry['file']}: SHA-256 does not match uv.lock ({entry['sha256']})")
        if entry.get("python") not in (None, here):
            fail(f"{entry['file']} needs {entry['python']}, this interpreter is {here}")
    for entry in wheels:
        dest = os.path.join(root, entry["dest"].lstrip("/"))
        count = extract(os.path.join(base, entry["file"]), dest, entry.get("members"))
        if count == 0:
            fail(f"{entry['file']}: no member matched {entry.get('members')}")
        print(f"install_wheels: {entry['file']}: {count} files into {entry['dest']}")


if __name__ == "__main__":
    main(sys.argv)
