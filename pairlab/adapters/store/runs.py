"""Reading published runs back: list them with their status, pull one with verification.

``pull_run`` trusts only the manifest: every object is downloaded to a ``.part``
file, its SHA-256 and size checked against the manifest, then renamed into
place; objects already present locally with the right hash are skipped, so an
interrupted pull resumes. A run without a manifest is incomplete and is refused
(``PublishError``, reason ``RUN_INCOMPLETE``); a hash mismatch is refused
naming the object (reason ``INTEGRITY_FAILED``). The manifest is written last.

Objects are fetched by a bounded pool of threads (``PAIRLAB_PULL_WORKERS``, default
16; issue 28: one at a time, a pull from Garage managed ~32 small objects/s, a round
trip each). Each object is fetched, verified and renamed by one thread, so what lands
in ``dest`` is always verified. When an object fails, nothing new is started, the
objects already in flight finish (and stay: verified, so a retry skips them), the
failed object's ``.part`` is removed, and the error of the first failed object in
manifest order is raised, naming it and how many others failed; no manifest is written.
"""

from __future__ import annotations

import os
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pairlab.adapters.store.base import Store, sha256_file
from pairlab.core.errors import InvalidInputError, PairlabError, PublishError, ReasonCode
from pairlab.core.run_manifest import (
    MANIFEST_NAME,
    RUNS_PREFIX,
    Manifest,
    ManifestObject,
    RunListing,
    parse_manifest,
    run_object_key,
    run_prefix,
    summarise_run,
    validate_run_id,
)


@dataclass(frozen=True)
class PullOutcome:
    manifest: Manifest
    dest: Path
    downloaded: list[str]
    skipped: list[str]

    def to_json(self) -> dict[str, object]:
        return {
            "run_id": self.manifest.run_id,
            "dest": str(self.dest),
            "status": "complete",
            "objects": len(self.manifest.objects),
            "downloaded": len(self.downloaded),
            "skipped": len(self.skipped),
            "kind": self.manifest.kind,
            "verdict": self.manifest.verdict,
        }


def split_run_url(url: str) -> tuple[str, str]:
    """``<store url>/runs/<run_id>`` -> (store url, run id)."""
    trimmed = url.rstrip("/")
    if trimmed.startswith(RUNS_PREFIX):
        trimmed = "./" + trimmed
    store_url, sep, run_id = trimmed.rpartition("/" + RUNS_PREFIX)
    if not sep or not store_url or not run_id or "/" in run_id:
        raise InvalidInputError(
            f"{url}: expected <store>/runs/<run_id> (e.g. s3://bucket/prefix/runs/RUN)",
            reason=ReasonCode.INVALID_INPUT,
        )
    return store_url, validate_run_id(run_id)


def read_manifest(store: Store, run_id: str) -> Manifest | None:
    found = _read_manifest_bytes(store, run_id)
    return None if found is None else found[0]


def _read_manifest_bytes(store: Store, run_id: str) -> tuple[Manifest, bytes] | None:
    key = run_object_key(run_id, MANIFEST_NAME)
    data = store.get_bytes(key)
    return None if data is None else (parse_manifest(data, f"{store.url}/{key}"), data)


def list_runs(store: Store) -> list[RunListing]:
    rows: list[RunListing] = []
    for run_id in store.list_children(RUNS_PREFIX):
        try:
            validate_run_id(run_id)
        except InvalidInputError:
            continue  # not a run directory of ours
        prefix = run_prefix(run_id)
        infos = list(store.list_objects(prefix))
        present = [info.key[len(prefix) :] for info in infos]
        latest = max((i.last_modified for i in infos if i.last_modified), default=None)
        try:
            manifest = read_manifest(store, run_id)
        except InvalidInputError:
            manifest = None  # unreadable manifest: shown as incomplete
        rows.append(summarise_run(run_id, manifest, present, latest))
    return rows


PULL_WORKERS_ENV: Final = "PAIRLAB_PULL_WORKERS"
DEFAULT_PULL_WORKERS: Final = 16


def pull_workers(value: int | None = None) -> int:
    """Threads fetching a run's objects: ``value``, else $PAIRLAB_PULL_WORKERS, else 16."""
    if value is None:
        raw = os.environ.get(PULL_WORKERS_ENV, "").strip()
        try:
            value = int(raw) if raw else DEFAULT_PULL_WORKERS
        except ValueError as exc:
            raise InvalidInputError(
                f"{PULL_WORKERS_ENV}={raw!r} is not an integer", reason=ReasonCode.INVALID_INPUT
            ) from exc
    if value < 1:
        raise InvalidInputError(
            f"{PULL_WORKERS_ENV}={value}: at least one thread", reason=ReasonCode.INVALID_INPUT
        )
    return value


def pull_run(store: Store, run_id: str, dest: Path, *, workers: int | None = None) -> PullOutcome:
    found = _read_manifest_bytes(store, run_id)
    if found is None:
        raise PublishError(
            f"run {run_id} in {store.url} is incomplete (no manifest): refusing to pull it",
            reason=ReasonCode.RUN_INCOMPLETE,
        )
    manifest, manifest_bytes = found
    if manifest.run_id != run_id:
        raise PublishError(
            f"{store.url}/{run_prefix(run_id)}{MANIFEST_NAME} names run {manifest.run_id!r}",
            reason=ReasonCode.INTEGRITY_FAILED,
        )
    dest.mkdir(parents=True, exist_ok=True)
    objects = list(manifest.objects)
    with ThreadPoolExecutor(max_workers=pull_workers(workers)) as pool:
        futures = [pool.submit(_pull_object, store, run_id, obj, dest) for obj in objects]
        wait(futures, return_when=FIRST_EXCEPTION)
        for future in futures:
            future.cancel()  # after a failure: start nothing new; in-flight objects finish
    failed = [f for f in futures if not f.cancelled() and f.exception() is not None]
    if failed:
        _raise_first(failed, len(futures))
    downloaded = [obj.key for obj, f in zip(objects, futures, strict=True) if f.result()]
    skipped = [obj.key for obj, f in zip(objects, futures, strict=True) if not f.result()]
    manifest_path = dest / MANIFEST_NAME
    part = manifest_path.with_name(MANIFEST_NAME + ".part")
    part.write_bytes(manifest_bytes)
    os.replace(part, manifest_path)
    return PullOutcome(manifest=manifest, dest=dest, downloaded=downloaded, skipped=skipped)


def _raise_first(failed: list[Future[bool]], total: int) -> None:
    """Raise the first failure in manifest order, saying how many others failed among the
    objects fetched (after a failure the pull starts nothing new: an object still queued
    then is neither fetched nor counted)."""
    first = failed[0].exception()
    assert first is not None
    if len(failed) == 1 or not isinstance(first, PairlabError):
        raise first
    others = len(failed) - 1
    raise type(first)(
        f"{first} (and {others} other object{'s' if others > 1 else ''} of {total} failed)",
        reason=first.reason,
    ) from first


def _pull_object(store: Store, run_id: str, obj: ManifestObject, dest: Path) -> bool:
    """Fetch and verify one object into ``dest``; False when a verified copy was there."""
    target = dest.joinpath(*obj.key.split("/"))
    if target.is_file() and target.stat().st_size == obj.size and sha256_file(target) == obj.sha256:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    try:
        store.download(run_object_key(run_id, obj.key), part)
    except PublishError as exc:
        part.unlink(missing_ok=True)
        if exc.reason != ReasonCode.NOT_FOUND:
            raise
        raise PublishError(
            f"run {run_id} in {store.url} is incomplete: {obj.key} is listed in the "
            "manifest but missing from the store",
            reason=ReasonCode.RUN_INCOMPLETE,
        ) from exc
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    actual = sha256_file(part)
    size = part.stat().st_size
    if actual != obj.sha256 or size != obj.size:
        part.unlink(missing_ok=True)
        raise PublishError(
            f"integrity check failed for {obj.key} in run {run_id}: expected sha256 "
            f"{obj.sha256} ({obj.size} bytes), got {actual} ({size} bytes)",
            reason=ReasonCode.INTEGRITY_FAILED,
        )
    os.replace(part, target)
    return True
