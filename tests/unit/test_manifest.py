"""Manifest model, completeness rule, keys, and store URL parsing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pairlab.adapters.store import LocalStore, open_store
from pairlab.adapters.store.runs import split_run_url
from pairlab.core.errors import EnvironmentUnavailable, InvalidInputError, ReasonCode
from pairlab.core.run_manifest import (
    Manifest,
    ManifestObject,
    RedactionSummary,
    parse_manifest,
    run_object_key,
    summarise_run,
)

SHA = "a" * 64


def _manifest(**overrides: object) -> Manifest:
    fields: dict[str, object] = {
        "run_id": "r1",
        "created_at": datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
        "kind": "eval",
        "objects": [ManifestObject(key="report.md", sha256=SHA, size=3)],
        "code_revision": "abc",
        "price_catalog_version": None,
        "redaction": RedactionSummary(policy="redact", findings_by_kind={}, objects_scanned=1),
    }
    fields.update(overrides)
    return Manifest.model_validate(fields)


def test_manifest_round_trip_and_same_content() -> None:
    manifest = _manifest()
    parsed = parse_manifest(manifest.to_bytes(), "m")
    assert parsed == manifest
    later = _manifest(created_at=datetime(2026, 1, 1, tzinfo=UTC))
    assert later.same_content(manifest)
    assert not _manifest(verdict="supported").same_content(manifest)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"{not json", ReasonCode.MALFORMED_INPUT),
        (b"[]", ReasonCode.MALFORMED_INPUT),
        (b'{"schema_version": 9}', ReasonCode.UNSUPPORTED_SCHEMA_VERSION),
        (b'{"schema_version": 1, "run_id": "r"}', ReasonCode.MALFORMED_INPUT),
    ],
)
def test_bad_manifests_are_refused(data: bytes, reason: ReasonCode) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_manifest(data, "m")
    assert caught.value.reason == reason


def test_manifest_with_unsafe_key_is_refused() -> None:
    data = _manifest().to_bytes().replace(b'"report.md"', b'"../../etc/passwd"')
    with pytest.raises(InvalidInputError):
        parse_manifest(data, "m")


def test_completeness_rule() -> None:
    assert summarise_run("r1", None, ["report.md"], None).status == "incomplete"
    complete = summarise_run("r1", _manifest(), ["report.md", "manifest.json"], None)
    assert complete.status == "complete" and complete.missing_objects == []
    missing = summarise_run("r1", _manifest(), ["manifest.json"], None)
    assert missing.status == "incomplete" and missing.missing_objects == ["report.md"]


def test_object_keys_are_confined_to_the_run() -> None:
    assert run_object_key("r1", "episodes/e:1/out.txt") == "runs/r1/episodes/e:1/out.txt"
    for bad_run in ("", "..", "a/b", "x" * 161):
        with pytest.raises(InvalidInputError):
            run_object_key(bad_run, "k")


@pytest.mark.parametrize(
    ("url", "store", "run_id"),
    [
        ("s3://bucket/prefix/runs/r-1", "s3://bucket/prefix", "r-1"),
        ("s3://bucket/runs/r-1/", "s3://bucket", "r-1"),
        ("/data/store/runs/r:2", "/data/store", "r:2"),
        ("file:///data/runs/r3", "file:///data", "r3"),
        ("runs/r4", ".", "r4"),
    ],
)
def test_split_run_url(url: str, store: str, run_id: str) -> None:
    assert split_run_url(url) == (store, run_id)


@pytest.mark.parametrize("url", ["s3://bucket/prefix", "/data/runs/", "/data/runs/a/b"])
def test_split_run_url_refuses_non_run_urls(url: str) -> None:
    with pytest.raises(InvalidInputError):
        split_run_url(url)


def test_open_store_url_forms() -> None:
    assert isinstance(open_store("/tmp/x"), LocalStore)
    local = open_store("file:///tmp/some%20dir")
    assert isinstance(local, LocalStore) and str(local.root) == "/tmp/some dir"
    for bad in ("http://example/x", "file://remote-host/x", "s3:///nobucket"):
        with pytest.raises(InvalidInputError):
            open_store(bad)


def test_s3_addressing_defaults_to_path_with_an_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    from pairlab.adapters.store.s3 import resolve_addressing

    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "PAIRLAB_S3_ADDRESSING"):
        monkeypatch.delenv(name, raising=False)
    assert resolve_addressing(None, None) == "auto"
    assert resolve_addressing("http://127.0.0.1:9000", None) == "path"
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://minio:9000")
    assert resolve_addressing(None, None) == "path"
    monkeypatch.setenv("PAIRLAB_S3_ADDRESSING", "virtual")
    assert resolve_addressing(None, None) == "virtual"
    monkeypatch.setenv("PAIRLAB_S3_ADDRESSING", "sideways")
    with pytest.raises(EnvironmentUnavailable):
        resolve_addressing(None, None)
