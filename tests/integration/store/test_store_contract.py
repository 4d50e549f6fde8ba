"""One contract, two stores: the local directory and S3 through a real moto HTTP server."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pairlab.adapters.store import open_store
from pairlab.adapters.store.base import Store
from pairlab.adapters.store.s3 import MULTIPART_THRESHOLD_BYTES
from pairlab.core.errors import InvalidInputError, PublishError, ReasonCode
from tests.integration.store.conftest import FAST_S3_OPTIONS


def _open(url: str) -> Store:
    return open_store(url, **FAST_S3_OPTIONS) if url.startswith("s3://") else open_store(url)


def test_put_head_get_list_delete(store_url: str, tmp_path: Path) -> None:
    store = _open(store_url)
    data = b'{"hello": "world"}\n'
    store.put_bytes("runs/r1/report.json", data)
    store.put_bytes("runs/r1/episodes/e:1/stdout.txt", b"out\n")
    store.put_bytes("runs/r2/report.md", b"# r2\n")

    info = store.head("runs/r1/report.json")
    assert info is not None
    assert info.size == len(data)
    assert info.sha256 == hashlib.sha256(data).hexdigest()
    assert store.get_bytes("runs/r1/report.json") == data
    assert store.head("runs/r1/absent.json") is None
    assert store.get_bytes("runs/r1/absent.json") is None

    keys = sorted(info.key for info in store.list_objects("runs/r1/"))
    assert keys == ["runs/r1/episodes/e:1/stdout.txt", "runs/r1/report.json"]
    assert store.list_children("runs/") == ["r1", "r2"]
    assert store.list_children("nothing/") == []

    dest = tmp_path / "downloaded"
    store.download("runs/r1/episodes/e:1/stdout.txt", dest)
    assert dest.read_bytes() == b"out\n"

    store.delete("runs/r1/report.json")
    store.delete("runs/r1/report.json")  # absent is fine
    assert store.head("runs/r1/report.json") is None
    assert store.get_bytes("runs/r1/report.json") is None


def test_overwrite_replaces_content_and_hash(store_url: str) -> None:
    store = _open(store_url)
    store.put_bytes("runs/r/a.txt", b"first")
    store.put_bytes("runs/r/a.txt", b"second version")
    info = store.head("runs/r/a.txt")
    assert info is not None
    assert info.sha256 == hashlib.sha256(b"second version").hexdigest()
    assert store.get_bytes("runs/r/a.txt") == b"second version"


def test_download_of_missing_object_is_not_found(store_url: str, tmp_path: Path) -> None:
    store = _open(store_url)
    with pytest.raises(PublishError) as caught:
        store.download("runs/r/missing.bin", tmp_path / "x")
    assert caught.value.reason == ReasonCode.NOT_FOUND


@pytest.mark.parametrize(
    "key", ["", "/abs", "runs/../etc", "runs//x", "runs/./x", "a\\b", "runs/x/"]
)
def test_unsafe_keys_are_rejected(store_url: str, key: str) -> None:
    store = _open(store_url)
    with pytest.raises(InvalidInputError):
        store.put_bytes(key, b"x")


def test_large_object_round_trip_above_multipart_threshold(store_url: str, tmp_path: Path) -> None:
    size = MULTIPART_THRESHOLD_BYTES + 1024 * 1024 + 7  # 9 MiB + 7 bytes
    block = hashlib.sha256(b"seed").digest() * 32
    source = tmp_path / "big.bin"
    source.write_bytes((block * (size // len(block) + 1))[:size])
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    store = _open(store_url)
    store.put_file("runs/r/big.bin", source, sha256=digest)

    info = store.head("runs/r/big.bin")
    assert info is not None
    assert (info.size, info.sha256) == (size, digest)
    if store_url.startswith("s3://"):
        # A multipart upload's ETag is "<md5 of part md5s>-<part count>".
        assert info.etag is not None and info.etag.endswith("-2"), info.etag
    dest = tmp_path / "back.bin"
    store.download("runs/r/big.bin", dest)
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == digest


@pytest.mark.s3
def test_missing_bucket_is_not_found(moto_endpoint: str, tmp_path: Path) -> None:
    store = open_store("s3://no-such-bucket-here/x", **FAST_S3_OPTIONS)
    with pytest.raises(PublishError) as caught:
        store.put_bytes("runs/r/a.txt", b"x")
    assert caught.value.reason == ReasonCode.NOT_FOUND
    assert "bucket" in caught.value.message
