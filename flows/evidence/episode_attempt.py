"""One attempt at one episode: the per-account slot, leftovers cleared, where and when it ran.

``episode_attempt`` wraps the execution of an episode (prepare .. record) in
both dispatch modes:

* it holds one slot of the episode limit (a Prefect global concurrency limit,
  created idempotently the first time a process uses it) for the whole attempt,
  so episodes against one provider account never exceed the limit, whichever
  flow run or worker runs them. A slot's lease is renewed while the episode
  runs; if the process dies the server frees it after ``lease_s``;
* it removes what an earlier, interrupted attempt left in the episode directory
  (collected files, ledger.db) so a retried episode never merges stale usage;
* it appends ``start``/``end`` lines to ``<episode dir>/execution.jsonl``:
  worker, host, pid, flow run id and the times the slot was held. An attempt
  with a ``start`` and no ``end`` was interrupted (worker killed).

The worker name is ``$PAIRLAB_WORKER_NAME`` if the worker's environment sets
it (the compose file and the tests do), else the host name.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flows.dispatch_params import DispatchParams
from pairlab.adapters.run.directory import RECORD_FILE, RunDir

EXECUTION_LOG = "execution.jsonl"
WORKER_NAME_ENV = "PAIRLAB_WORKER_NAME"

_limits_ready: set[str] = set()
_limits_lock = threading.Lock()


def worker_name() -> str:
    return os.environ.get(WORKER_NAME_ENV) or socket.gethostname()


def ensure_episode_limit(name: str, slots: int) -> None:
    """Create the global concurrency limit ``name`` with ``slots`` if it does not exist."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

    with _limits_lock:
        if name in _limits_ready:
            return
        with get_client(sync_client=True) as client:
            try:
                client.read_global_concurrency_limit_by_name(name)
            except ObjectNotFound:
                with contextlib.suppress(ObjectAlreadyExists):  # another worker won the race
                    client.create_global_concurrency_limit(
                        GlobalConcurrencyLimitCreate(name=name, limit=slots)
                    )
        _limits_ready.add(name)


def _flow_run_id() -> str | None:
    from prefect.runtime import flow_run

    value = flow_run.id
    return str(value) if value else None


def _append(path: Path, entry: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def clear_leftovers(episode_dir: Path) -> list[str]:
    """Remove an interrupted attempt's outputs (never a finished record, never the log)."""
    if (episode_dir / RECORD_FILE).exists() or not episode_dir.is_dir():
        return []
    removed = []
    for child in sorted(episode_dir.iterdir()):
        if child.name == EXECUTION_LOG:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
        removed.append(child.name)
    return removed


@contextlib.contextmanager
def episode_attempt(dispatch: DispatchParams, run_dir: RunDir, episode_id: str) -> Iterator[None]:
    """Hold an episode slot (if a limit is set) and log the attempt around the body."""
    from prefect.concurrency.sync import concurrency

    limit = dispatch.resolved_limit()
    slot: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    if limit is not None:
        ensure_episode_limit(limit, dispatch.episode_limit_slots)
        slot = concurrency(limit, occupy=1, lease_duration=dispatch.lease_s, strict=True)
    episode_dir = run_dir.episode_dir(episode_id)
    log = episode_dir / EXECUTION_LOG
    base = {
        "episode_id": episode_id,
        "worker": worker_name(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "flow_run_id": _flow_run_id(),
        "limit": limit,
    }
    with slot:
        cleared = clear_leftovers(episode_dir)
        _append(
            log, {**base, "event": "start", "at": datetime.now(UTC).isoformat(), "cleared": cleared}
        )
        yield
        _append(log, {**base, "event": "end", "at": datetime.now(UTC).isoformat()})
