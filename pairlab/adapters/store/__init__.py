"""Object stores: a local directory (the embedded default) and S3-compatible storage.

``open_store(url)`` accepts ``s3://bucket/prefix``, ``file://path`` or a plain
path. boto3 is imported only when an S3 store is opened.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pairlab.adapters.store.base import ObjectInfo, Store
from pairlab.adapters.store.local import LocalStore
from pairlab.core.errors import InvalidInputError, ReasonCode

__all__ = ["LocalStore", "ObjectInfo", "Store", "is_s3_url", "local_store_root", "open_store"]


def is_s3_url(url: str) -> bool:
    return url.startswith("s3://")


def local_store_root(url: str) -> Path:
    """The directory of a ``file://`` URL or plain path (any other scheme is invalid input)."""
    if url.startswith("file://"):
        parsed = urlparse(url)
        if parsed.netloc not in ("", "localhost"):
            raise InvalidInputError(
                f"{url}: only local file:// URLs are supported", reason=ReasonCode.INVALID_INPUT
            )
        return Path(unquote(parsed.path))
    if "://" in url:
        raise InvalidInputError(
            f"{url}: unsupported store URL (use s3://bucket/prefix, file://path or a path)",
            reason=ReasonCode.INVALID_INPUT,
        )
    return Path(url)


def open_store(url: str, **options: Any) -> Store:
    """Open the store at ``url``; ``options`` go to the S3 store (retries, timeouts...)."""
    if is_s3_url(url):
        from pairlab.adapters.store.s3 import S3Store

        rest = url[len("s3://") :]
        bucket, _, prefix = rest.partition("/")
        if not bucket:
            raise InvalidInputError(f"{url}: no bucket name", reason=ReasonCode.INVALID_INPUT)
        return S3Store(bucket, prefix, **options)
    return LocalStore(local_store_root(url))
