"""Garage, the S3-compatible object store of the team stack: its binary and a single node.

The binary is built from the Rust crate registry, pinned (:data:`GARAGE_VERSION`) and
cached by version and features: ``scripts/build-garage.sh`` runs ``cargo install garage
--locked --no-default-features --features F --version V --root
~/.cache/pairlab/garage/V-F`` only when that binary is absent (about 12 minutes on two
cores); ``.ci/run`` starts it in the background first thing and waits for it before pytest. ``PAIRLAB_GARAGE_BIN`` points
at another binary.

:class:`GarageNode` runs one node on loopback (replication factor 1) for tests and the
bench: configuration in a directory, layout applied, a bucket and a key created. The
compose stack runs three nodes from the ``pairlab/garage`` image instead
(``infra/compose.yaml``, ``infra/garage/``).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pairlab.core.errors import EnvironmentUnavailable, ExecutionError, ReasonCode

GARAGE_VERSION: Final = "2.5.0"
# Only what the project uses: the sqlite metadata engine (every config here says
# db_engine = "sqlite") with bundled C libraries; no lmdb, k2v or metrics. The features are
# part of the cache key, so a change of features never reuses an old binary.
GARAGE_FEATURES: Final = "bundled-libs,sqlite"
BIN_ENV: Final = "PAIRLAB_GARAGE_BIN"
S3_REGION: Final = "us-east-1"  # what AWS_DEFAULT_REGION says to boto3 (Garage checks it)


def cache_key(version: str = GARAGE_VERSION, features: str = GARAGE_FEATURES) -> str:
    """``<version>-<features joined by +>``: the folder under ``~/.cache/pairlab/garage``."""
    return f"{version}-{features.replace(',', '+')}"


def cached_binary(version: str = GARAGE_VERSION) -> Path:
    return Path.home() / ".cache" / "pairlab" / "garage" / cache_key(version) / "bin" / "garage"


def garage_binary() -> Path:
    override = os.environ.get(BIN_ENV, "")
    return Path(override).expanduser() if override else cached_binary()


def require_garage_binary() -> Path:
    path = garage_binary()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise EnvironmentUnavailable(
            f"the Garage {GARAGE_VERSION} binary is not at {path}: build it once with "
            "scripts/build-garage.sh (cargo, about 20 min) or set PAIRLAB_GARAGE_BIN",
            reason=ReasonCode.BUILD_PREREQUISITE_MISSING,
        )
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def node_config(
    root: Path,
    *,
    rpc_port: int,
    s3_port: int,
    admin_port: int,
    rpc_secret: str,
    admin_token: str,
    replication_factor: int = 1,
    host: str = "127.0.0.1",
    public_host: str = "127.0.0.1",
) -> str:
    """A Garage 2.x configuration file (sqlite metadata: no mmap'd LMDB on overlay files)."""
    return f"""metadata_dir = "{root}/meta"
data_dir = "{root}/data"
db_engine = "sqlite"
replication_factor = {replication_factor}
rpc_bind_addr = "{host}:{rpc_port}"
rpc_public_addr = "{public_host}:{rpc_port}"
rpc_secret = "{rpc_secret}"

[s3_api]
s3_region = "{S3_REGION}"
api_bind_addr = "{host}:{s3_port}"
root_domain = ".s3.garage.localhost"

[admin]
api_bind_addr = "{host}:{admin_port}"
admin_token = "{admin_token}"
"""


_KEY_ID = re.compile(r"Key ID:\s*(GK[0-9a-f]+)")
_SECRET = re.compile(r"Secret key:\s*([0-9a-f]{64})")


@dataclass
class GarageKey:
    key_id: str
    secret: str


class GarageNode:
    """One Garage process on loopback with its layout applied (``start``/``stop``/``kill``)."""

    def __init__(self, root: Path, *, binary: Path | None = None) -> None:
        self.root = root
        self.binary = binary or require_garage_binary()
        self.rpc_port, self.s3_port, self.admin_port = free_port(), free_port(), free_port()
        self.config = root / "garage.toml"
        self.log = root / "garage.log"
        root.mkdir(parents=True, exist_ok=True)
        self.config.write_text(
            node_config(
                root,
                rpc_port=self.rpc_port,
                s3_port=self.s3_port,
                admin_port=self.admin_port,
                rpc_secret=secrets.token_hex(32),
                admin_token=secrets.token_hex(16),
            ),
            encoding="utf-8",
        )
        self._process: subprocess.Popen[bytes] | None = None
        self._layout_done = False

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"

    def cli(self, *args: str, check: bool = True) -> str:
        result = subprocess.run(
            [str(self.binary), "-c", str(self.config), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if check and result.returncode != 0:
            raise ExecutionError(
                f"garage {' '.join(args)} failed: {result.stderr.strip()[-500:]}",
                reason=ReasonCode.EXECUTION_FAILED,
            )
        return result.stdout

    def start(self, timeout_s: float = 30.0) -> GarageNode:
        with self.log.open("ab") as log:
            self._process = subprocess.Popen(
                [str(self.binary), "-c", str(self.config), "server"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "garage=warn")},
            )
        deadline = time.monotonic() + timeout_s
        while True:
            if self._process.poll() is not None:
                raise EnvironmentUnavailable(
                    f"garage exited with {self._process.returncode} (log {self.log})",
                    reason=ReasonCode.S3_UNAVAILABLE,
                )
            try:
                with socket.create_connection(("127.0.0.1", self.s3_port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise EnvironmentUnavailable(
                        f"garage did not listen within {timeout_s:.0f} s (log {self.log})",
                        reason=ReasonCode.S3_UNAVAILABLE,
                    ) from None
                time.sleep(0.1)
        if not self._layout_done:
            self._apply_layout(deadline)
        return self

    def _apply_layout(self, deadline: float) -> None:
        node_id = ""
        while not node_id:
            node_id = self.cli("node", "id", "-q", check=False).strip().split("@")[0]
            if not node_id:
                if time.monotonic() > deadline:
                    raise EnvironmentUnavailable(
                        "garage node id unavailable", reason=ReasonCode.S3_UNAVAILABLE
                    )
                time.sleep(0.2)
        self.cli("layout", "assign", "-z", "dc1", "-c", "1G", node_id)
        self.cli("layout", "apply", "--version", "1")
        self._layout_done = True

    def create_bucket(self, name: str) -> None:
        self.cli("bucket", "create", name)

    def create_key(self, name: str, *, buckets: tuple[str, ...] = ()) -> GarageKey:
        out = self.cli("key", "create", name)
        key_id, secret = _KEY_ID.search(out), _SECRET.search(out)
        if key_id is None or secret is None:
            raise ExecutionError(
                f"garage key create: unexpected output {out[:300]!r}",
                reason=ReasonCode.EXECUTION_FAILED,
            )
        key = GarageKey(key_id.group(1), secret.group(1))
        for bucket in buckets:
            self.allow(bucket, key)
        return key

    def allow(self, bucket: str, key: GarageKey) -> None:
        self.cli("bucket", "allow", "--read", "--write", "--owner", bucket, "--key", key.key_id)

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=5)
        self._process = None

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


__all__ = [
    "GARAGE_FEATURES",
    "GARAGE_VERSION",
    "GarageKey",
    "GarageNode",
    "cache_key",
    "cached_binary",
    "garage_binary",
    "node_config",
    "require_garage_binary",
]
