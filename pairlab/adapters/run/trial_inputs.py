"""I/O a canary trial needs before it runs: digests, revisions and a private sim account.

* :func:`tree_digest` — ``sha256:<hex>`` over a directory tree: for every file in
  sorted relative-path order, its POSIX path, a NUL, its SHA-256 and a newline.
  Renaming, adding, removing or editing any file changes the digest.
* :func:`contract_digest` — ``sha256:<hex>`` of a task's grader definitions
  (canonical JSON), the trial's acceptance contract.
* :func:`open_sim_account` — a fresh simulated subscription account for one trial
  (``quota.json`` in the simulator's documented format, containers/simclient/README.md),
  created before the first episode so that episode's "before" snapshot is known,
  with the trial's budgets. Nobody else charges this account, which is why a
  simulator trial may assert no unrelated concurrent use.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pairlab.adapters.store.provenance import code_revision
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.catalog import TaskEntry

SIM_WINDOWS = (("five-hour", 300), ("seven-day", 10080))


def tree_digest(root: Path) -> str:
    if not root.is_dir():
        raise InvalidInputError(
            f"fixture directory {root} does not exist", reason=ReasonCode.NOT_FOUND
        )
    outer = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        outer.update(rel.encode("utf-8") + b"\0")
        outer.update(hashlib.sha256(path.read_bytes()).hexdigest().encode("ascii") + b"\n")
    return f"sha256:{outer.hexdigest()}"


def contract_digest(task: TaskEntry) -> str:
    graders = [g.model_dump(mode="json") for g in task.graders]
    canonical = json.dumps(graders, sort_keys=True, separators=(",", ":"))
    return f"sha256:{hashlib.sha256(canonical.encode('utf-8')).hexdigest()}"


def source_revision() -> str:
    """``git:<HEAD>`` of the pairlab checkout, else ``pkg:<version>``."""
    found = code_revision()
    if found is None:
        return "unknown"
    if found.startswith("pairlab "):
        return f"pkg:pairlab-{found.removeprefix('pairlab ')}"
    return f"git:{found}"


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def open_sim_account(
    account_dir: Path, budgets: Mapping[str, int], now: datetime | None = None
) -> Path:
    """Create a fresh simulated account with the given window budgets (tokens).

    Refuses an existing account: a trial's account is private to it.
    """
    quota_file = account_dir / "quota.json"
    if quota_file.exists():
        raise InvalidInputError(
            f"simulated account {account_dir} already exists; a trial needs a fresh one",
            reason=ReasonCode.INVALID_INPUT,
        )
    account_dir.mkdir(parents=True, exist_ok=True)
    at = (now or datetime.now(UTC)).replace(microsecond=0)
    windows: dict[str, Any] = {}
    for name, minutes in SIM_WINDOWS:
        windows[name] = {
            "window_minutes": minutes,
            "budget_tokens": int(budgets[name]),
            "used_tokens": 0,
            "used_percent": 0,
            "resets_at": _iso(at + timedelta(minutes=minutes)),
            "reset_id": f"{name}-1",
            "reset_count": 1,
        }
    state = {
        "schema_version": 1,
        "provider": "sim",
        "account": "sim-account",
        "updated_at": _iso(at),
        "windows": windows,
    }
    quota_file.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return account_dir
