"""Fixtures for the store tests: real S3 HTTP servers on loopback, moto and Garage.

The S3 contract (``store_url``, ``s3_url``, ``s3_server``) runs against both servers:
moto's ``ThreadedMotoServer`` (server mode) and a single Garage node
(``pairlab.adapters.store.garage.GarageNode``: the pinned binary, layout applied, a key
allowed to create buckets). The fault tests start their own ``moto_server``
subprocess so they can stop it. AWS configuration comes from the environment, as it
would for a user: credentials and ``AWS_ENDPOINT_URL`` are set for the session (moto's
dummy ones) and per test for the server in use, restored after. No in-process mocking
of boto3.
"""

from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import require, wait_for_garage_build

_AWS_VARS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "PAIRLAB_S3_ADDRESSING",
)
_bucket_numbers = itertools.count()

# Fast-failing options for tests: few attempts, short backoff and timeouts.
FAST_S3_OPTIONS: dict[str, Any] = {
    "max_attempts": 2,
    "retries": 2,
    "backoff_s": 0.05,
    "connect_timeout_s": 2.0,
    "read_timeout_s": 10.0,
}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def aws_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in _AWS_VARS}
    empty = tmp_path_factory.mktemp("aws-config") / "none"
    for name in _AWS_VARS:
        os.environ.pop(name, None)
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_CONFIG_FILE": str(empty),  # the developer's ~/.aws is never read
            "AWS_SHARED_CREDENTIALS_FILE": str(empty),
        }
    )
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def moto_endpoint(aws_env: None) -> Iterator[str]:
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        require(False, "moto[server] is not installed")
        raise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    previous = os.environ.get("AWS_ENDPOINT_URL")
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    yield endpoint
    if previous is None:
        os.environ.pop("AWS_ENDPOINT_URL", None)
    else:
        os.environ["AWS_ENDPOINT_URL"] = previous
    server.stop()


@dataclass(frozen=True)
class S3Server:
    name: str  # moto or garage
    endpoint: str
    key_id: str
    secret: str


@pytest.fixture(scope="session")
def moto_server(moto_endpoint: str) -> S3Server:
    return S3Server("moto", moto_endpoint, "testing", "testing")


@pytest.fixture(scope="session")
def garage_server(aws_env: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    from pairlab.adapters.store.garage import GarageNode, garage_binary

    wait_for_garage_build()
    binary = garage_binary()
    require(binary.is_file(), f"the Garage binary at {binary} (scripts/build-garage.sh)")
    node = GarageNode(tmp_path_factory.mktemp("garage"), binary=binary).start()
    key = node.create_key("pairlab-tests")
    node.cli("key", "allow", "--create-bucket", key.key_id)  # make_bucket uses CreateBucket
    yield S3Server("garage", node.endpoint, key.key_id, key.secret)
    node.remove()


def use_server(server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """Point the standard AWS variables at ``server`` for one test."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", server.key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", server.secret)
    return server


@pytest.fixture(params=["moto", "garage"])
def s3_server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """Each S3 server in turn, with the environment pointing at it."""
    return use_server(request.getfixturevalue(f"{request.param}_server"), monkeypatch)


def make_bucket(endpoint: str) -> str:
    import boto3

    name = f"pairlab-test-{os.getpid()}-{next(_bucket_numbers)}"
    # A fresh session: boto3's default one caches the first credentials it resolved, and
    # the servers differ (moto takes any key, Garage only its own).
    session = boto3.session.Session()
    session.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3_url(s3_server: S3Server) -> str:
    """A fresh bucket on each S3 server, as a store URL with a prefix."""
    return f"s3://{make_bucket(s3_server.endpoint)}/team/evals"


@pytest.fixture(
    params=[
        "local",
        pytest.param("moto", marks=pytest.mark.s3),
        pytest.param("garage", marks=pytest.mark.s3),
    ]
)
def store_url(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    """The same contract over the local store and both S3 servers."""
    if request.param == "local":
        return str(tmp_path / "store")
    server = use_server(request.getfixturevalue(f"{request.param}_server"), monkeypatch)
    return f"s3://{make_bucket(server.endpoint)}/team/evals"


def s3_client(endpoint: str) -> Any:
    import boto3

    return boto3.session.Session().client("s3", endpoint_url=endpoint, region_name="us-east-1")
