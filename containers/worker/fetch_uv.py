"""Install one uv release from PyPI into a directory, without pip (the worker's builder stage).

The Debian base image has neither pip nor ensurepip; apt-get + pip only to get uv cost a
150 MB layer and a Debian mirror round trip. This reads PyPI's simple index (JSON, PEP 691),
takes the manylinux wheel of ``VERSION`` for this machine, checks its sha256 against the
index and extracts the ``uv`` binary. Usage: ``python3 fetch_uv.py VERSION DEST_DIR``.
TLS trusts ``SSL_CERT_FILE`` (the build host's CA bundle, as for uv itself).
"""

import hashlib
import io
import json
import platform
import sys
import urllib.request
import zipfile
from pathlib import Path

INDEX = "https://pypi.org/simple/uv/"


def main(version: str, dest: str) -> int:
    machine = platform.machine()
    request = urllib.request.Request(
        INDEX, headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        files = json.load(response)["files"]
    prefix = f"uv-{version}-py3-none-manylinux_2_17_{machine}."
    wheels = [f for f in files if f["filename"].startswith(prefix)]
    if not wheels:
        print(f"fetch_uv: no manylinux wheel of uv {version} for {machine}", file=sys.stderr)
        return 1
    wheel = min(wheels, key=lambda f: len(f["filename"]))
    with urllib.request.urlopen(wheel["url"], timeout=300) as response:
        data = response.read()
    if hashlib.sha256(data).hexdigest() != wheel["hashes"]["sha256"]:
        print(f"fetch_uv: {wheel['filename']} does not match PyPI's sha256", file=sys.stderr)
        return 1
    target = Path(dest) / "uv"
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        target.write_bytes(archive.read(f"uv-{version}.data/scripts/uv"))
    target.chmod(0o755)
    print(f"fetch_uv: {wheel['filename']} -> {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
