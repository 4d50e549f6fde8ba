"""S3-compatible object storage through boto3 (AWS S3, Garage, MinIO-like servers, moto).

Standard AWS configuration applies: profiles (``AWS_PROFILE``), credentials from
the environment or config files, ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_S3``
and region. Path-style addressing is used when an endpoint URL is set (what
MinIO-like servers need); ``PAIRLAB_S3_ADDRESSING=path|virtual|auto`` overrides.

Large objects go through boto3's managed transfer (multipart above
``MULTIPART_THRESHOLD_BYTES``); smaller ones are one GET each. The client is shared by
the pull's threads (boto3 clients are thread-safe), with a connection pool to match. Transient failures are retried twice over:
botocore's own retry (standard mode) per request, and a bounded retry with
exponential backoff around each whole-object operation (``PAIRLAB_S3_RETRIES``
attempts, default 3; first pause ``PAIRLAB_S3_BACKOFF_S``, default 1 s; botocore's
attempts follow ``AWS_MAX_ATTEMPTS`` / the profile). When the server stays
unreachable the error is :class:`EnvironmentUnavailable` (``S3_UNAVAILABLE``).
The content SHA-256 travels as object metadata (``x-amz-meta-sha256``); the
server is never trusted to check it (moto does not).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import boto3
import botocore.exceptions
from boto3.exceptions import S3UploadFailedError
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

from pairlab.adapters.store.base import HASH_CHUNK_BYTES, ObjectInfo, check_key, sha256_bytes
from pairlab.core.errors import EnvironmentUnavailable, InvalidInputError, PublishError, ReasonCode

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

MULTIPART_THRESHOLD_BYTES = 8 * 1024 * 1024
SHA256_METADATA = "sha256"
Addressing = Literal["path", "virtual", "auto"]

_TRANSIENT_CODES = frozenset(
    {
        "RequestTimeout",
        "RequestTimeoutException",
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "InternalError",
        "ServiceUnavailable",
        "503",
        "500",
        "502",
        "504",
    }
)
_NOT_FOUND_CODES = frozenset({"404", "NoSuchKey", "NotFound"})

T = TypeVar("T")


def endpoint_from_env() -> str | None:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError as exc:
        raise InvalidInputError(
            f"{name} must be an integer", reason=ReasonCode.INVALID_INPUT
        ) from exc


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError as exc:
        raise InvalidInputError(
            f"{name} must be a number", reason=ReasonCode.INVALID_INPUT
        ) from exc


def resolve_addressing(endpoint_url: str | None, addressing: str | None) -> Addressing:
    chosen = addressing or os.environ.get("PAIRLAB_S3_ADDRESSING") or None
    if chosen is None:
        return "path" if (endpoint_url or endpoint_from_env()) else "auto"
    if chosen not in ("path", "virtual", "auto"):
        raise EnvironmentUnavailable(
            f"PAIRLAB_S3_ADDRESSING must be path, virtual or auto (got {chosen!r})",
            reason=ReasonCode.S3_UNAVAILABLE,
        )
    return chosen  # type: ignore[return-value]


class S3Store:
    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        profile: str | None = None,
        addressing: str | None = None,
        max_attempts: int | None = None,
        retries: int | None = None,
        backoff_s: float | None = None,
        connect_timeout_s: float = 5.0,
        read_timeout_s: float = 60.0,
        multipart_threshold_bytes: int = MULTIPART_THRESHOLD_BYTES,
        max_pool_connections: int = 32,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.url = f"s3://{bucket}/{self.prefix}".rstrip("/")
        self._retries = max(
            1, retries if retries is not None else _env_int("PAIRLAB_S3_RETRIES", 3)
        )
        self._backoff_s = (
            backoff_s if backoff_s is not None else _env_float("PAIRLAB_S3_BACKOFF_S", 1.0)
        )
        session = (
            boto3.session.Session(profile_name=profile) if profile else boto3.session.Session()
        )
        # botocore's per-request retries: AWS_MAX_ATTEMPTS / the profile apply unless overridden.
        retry_config: dict[str, Any] = {"mode": "standard"}
        if max_attempts is not None:
            retry_config["max_attempts"] = max_attempts
        # boto3's current defaults are kept on purpose: request_checksum_calculation and
        # response_checksum_validation "when_supported" (botocore >= 1.36: CRC32 checksums,
        # aws-chunked uploads with trailing checksums on PutObject/UploadPart). Garage 2.5
        # (the stack's store) and moto accept them; the whole store contract, multipart
        # above the threshold included, runs against both (tests/integration/store). A
        # server that refuses aws-chunked uploads (older MinIO-likes) needs
        # AWS_REQUEST_CHECKSUM_CALCULATION=when_required, which botocore reads itself.
        config = Config(
            retries=retry_config,  # type: ignore[arg-type]
            s3={"addressing_style": resolve_addressing(endpoint_url, addressing)},
            connect_timeout=connect_timeout_s,
            read_timeout=read_timeout_s,
            # one connection per pull thread (pairlab.adapters.store.runs.pull_workers)
            max_pool_connections=max_pool_connections,
        )
        self._client: S3Client = session.client(
            "s3",
            endpoint_url=endpoint_url,
            region_name=region or session.region_name or "us-east-1",
            config=config,
        )
        self._transfer = TransferConfig(
            multipart_threshold=multipart_threshold_bytes,
            multipart_chunksize=multipart_threshold_bytes,
            max_concurrency=4,
        )

    # --- the Store contract -------------------------------------------------

    def put_file(self, key: str, path: Path, *, sha256: str) -> None:
        full = self._full(key)
        self._retry(
            f"upload {key}",
            lambda: self._client.upload_file(
                str(path),
                self.bucket,
                full,
                ExtraArgs={"Metadata": {SHA256_METADATA: sha256}},
                Config=self._transfer,
            ),
        )

    def put_bytes(self, key: str, data: bytes) -> None:
        full = self._full(key)
        digest = sha256_bytes(data)
        self._retry(
            f"upload {key}",
            lambda: self._client.put_object(
                Bucket=self.bucket, Key=full, Body=data, Metadata={SHA256_METADATA: digest}
            ),
        )

    def head(self, key: str) -> ObjectInfo | None:
        full = self._full(key)
        try:
            response = self._retry(
                f"head {key}", lambda: self._client.head_object(Bucket=self.bucket, Key=full)
            )
        except _NotFound:
            return None
        return ObjectInfo(
            key=key,
            size=int(response["ContentLength"]),
            sha256=response.get("Metadata", {}).get(SHA256_METADATA),
            last_modified=response.get("LastModified"),
            etag=str(response.get("ETag", "")).strip('"') or None,
        )

    def get_bytes(self, key: str) -> bytes | None:
        full = self._full(key)

        def fetch() -> bytes:
            response = self._client.get_object(Bucket=self.bucket, Key=full)
            return response["Body"].read()

        try:
            return self._retry(f"download {key}", fetch)
        except _NotFound:
            return None

    def download(self, key: str, dest: Path) -> None:
        """One GET streamed into ``dest``; an object above the multipart threshold goes
        through boto3's managed transfer instead (ranged GETs in parallel). The managed
        transfer for every object cost a HEAD and a transfer manager per object (~30 ms
        each from Garage, issue 28)."""
        full = self._full(key)

        def fetch() -> None:
            response = self._client.get_object(Bucket=self.bucket, Key=full)
            body = response["Body"]
            if int(response.get("ContentLength", 0)) > self._transfer.multipart_threshold:
                body.close()
                self._client.download_file(self.bucket, full, str(dest), Config=self._transfer)
                return
            with dest.open("wb") as handle:
                for chunk in body.iter_chunks(HASH_CHUNK_BYTES):
                    handle.write(chunk)

        try:
            self._retry(f"download {key}", fetch)
        except _NotFound as exc:
            raise PublishError(
                f"{key}: no such object in {self.url}", reason=ReasonCode.NOT_FOUND
            ) from exc

    def list_objects(self, prefix: str) -> Iterator[ObjectInfo]:
        def collect() -> list[ObjectInfo]:
            found: list[ObjectInfo] = []
            paginator = self._client.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + prefix):
                for item in page.get("Contents", []):
                    found.append(
                        ObjectInfo(
                            key=item["Key"][len(self.prefix) :],
                            size=int(item["Size"]),
                            sha256=None,
                            last_modified=item.get("LastModified"),
                            etag=str(item.get("ETag", "")).strip('"') or None,
                        )
                    )
            return found

        yield from self._retry(f"list {prefix}", collect)

    def list_children(self, prefix: str) -> list[str]:
        def collect() -> list[str]:
            names: list[str] = []
            paginator = self._client.get_paginator("list_objects_v2")
            full = self.prefix + prefix
            for page in paginator.paginate(Bucket=self.bucket, Prefix=full, Delimiter="/"):
                for common in page.get("CommonPrefixes", []):
                    names.append(common["Prefix"][len(full) :].rstrip("/"))
            return sorted(names)

        return self._retry(f"list {prefix}", collect)

    def delete(self, key: str) -> None:
        full = self._full(key)
        self._retry(
            f"delete {key}", lambda: self._client.delete_object(Bucket=self.bucket, Key=full)
        )

    # --- internals -----------------------------------------------------------

    def _full(self, key: str) -> str:
        return self.prefix + check_key(key)

    def _retry(self, what: str, operation: Callable[[], T]) -> T:
        """Run a whole-object operation with bounded retries on transient failures."""
        last: Exception | None = None
        for attempt in range(self._retries):
            try:
                return operation()
            except Exception as exc:
                kind = _classify(exc)
                if kind == "not-found":
                    raise _NotFound(what) from exc
                if kind == "fatal":
                    raise _translate_fatal(exc, what, self.url) from exc
                last = exc
            if attempt + 1 < self._retries:
                time.sleep(self._backoff_s * (2**attempt))
        assert last is not None
        if _classify(last) == "connection":
            raise EnvironmentUnavailable(
                f"S3 endpoint unreachable for {self.url} ({what}) after "
                f"{self._retries} attempts: {last}",
                reason=ReasonCode.S3_UNAVAILABLE,
            ) from last
        raise PublishError(
            f"{what} in {self.url} failed after {self._retries} attempts: {last}",
            reason=ReasonCode.PUBLISH_FAILED,
        ) from last


class _NotFound(Exception):
    pass


def _error_code(exc: BaseException) -> str | None:
    if isinstance(exc, botocore.exceptions.ClientError):
        error = exc.response.get("Error", {})
        return str(error.get("Code", "")) or None
    return None


def _classify(exc: BaseException) -> Literal["connection", "transient", "not-found", "fatal"]:
    if isinstance(exc, S3UploadFailedError) and exc.__context__ is not None:
        return _classify(exc.__context__)
    if isinstance(exc, botocore.exceptions.ConnectionError | botocore.exceptions.HTTPClientError):
        return "connection"
    code = _error_code(exc)
    if code is not None:
        if code in _NOT_FOUND_CODES:
            return "not-found"
        if code in _TRANSIENT_CODES:
            return "transient"
        return "fatal"
    if isinstance(exc, S3UploadFailedError | ConnectionError | TimeoutError):
        return "transient"
    return "fatal"


def _translate_fatal(exc: Exception, what: str, url: str) -> Exception:
    if isinstance(exc, botocore.exceptions.NoCredentialsError):
        return EnvironmentUnavailable(
            f"no AWS credentials found for {url} (set AWS_PROFILE or AWS_ACCESS_KEY_ID)",
            reason=ReasonCode.S3_UNAVAILABLE,
        )
    code = _error_code(exc)
    if code == "NoSuchBucket":
        return PublishError(f"{url}: bucket does not exist", reason=ReasonCode.NOT_FOUND)
    if isinstance(exc, botocore.exceptions.BotoCoreError | botocore.exceptions.ClientError):
        return PublishError(f"{what} in {url} failed: {exc}", reason=ReasonCode.PUBLISH_FAILED)
    return exc
