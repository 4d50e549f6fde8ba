"""Fixtures for the store tests: a real S3 HTTP server (moto, server mode) on loopback.

The shared server is moto's ``ThreadedMotoServer`` on a free loopback port; the
fault tests start their own ``moto_server`` subprocess so they can stop it. AWS
configuration comes from the environment, as it would for a user: dummy
credentials and ``AWS_ENDPOINT_URL`` are set for the session and restored after.
No in-process mocking of boto3.
"""

from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import require

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


def make_bucket(endpoint: str) -> str:
    import boto3

    name = f"pairlab-test-{os.getpid()}-{next(_bucket_numbers)}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3_url(moto_endpoint: str) -> str:
    """A fresh bucket on the shared server, as a store URL with a prefix."""
    return f"s3://{make_bucket(moto_endpoint)}/team/evals"


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same contract over both stores."""
    if request.param == "local":
        return str(tmp_path / "store")
    return str(request.getfixturevalue("s3_url"))


def s3_client(endpoint: str) -> Any:
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
