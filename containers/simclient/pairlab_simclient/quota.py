"""The simulated subscription quota shared by all episodes of one account.

``$PAIRLAB_SIM_ACCOUNT_DIR/quota.json`` holds a five-hour (300 min) and a
seven-day (10080 min) window. Each episode consumes its drawn total tokens in
both windows; ``used_percent`` is the whole-number floor of used/budget (capped
at 100), like the real percent sources. A window whose ``resets_at`` has passed
restarts at 0 with a new ``resets_at`` and ``reset_id``. Updates hold an
exclusive fcntl lock on ``quota.lock`` and replace the file atomically, so
readers never see a torn file. Format: containers/simclient/README.md.
"""

from __future__ import annotations

import copy
import fcntl
import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pairlab_simclient.episode_env import parse_ts

QUOTA_FILE = "quota.json"
LOCK_FILE = "quota.lock"
WINDOWS = (
    ("five-hour", 300, "five_hour_budget_tokens"),
    ("seven-day", 10080, "seven_day_budget_tokens"),
)


def _iso_seconds(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _percent(used: int, budget: int) -> int:
    return min(100, used * 100 // budget) if budget > 0 else 100


def new_quota(now: datetime, config: dict[str, Any]) -> dict[str, Any]:
    windows: dict[str, Any] = {}
    for name, minutes, budget_key in WINDOWS:
        windows[name] = {
            "window_minutes": minutes,
            "budget_tokens": int(config["quota"][budget_key]),
            "used_tokens": 0,
            "used_percent": 0,
            "resets_at": _iso_seconds(now + timedelta(minutes=minutes)),
            "reset_id": f"{name}-1",
            "reset_count": 1,
        }
    return {
        "schema_version": 1,
        "provider": "sim",
        "account": "sim-account",
        "updated_at": _iso_seconds(now),
        "windows": windows,
    }


def roll_windows(state: dict[str, Any], now: datetime) -> dict[str, Any]:
    """Restart every window whose resets_at <= now (pure; returns a copy)."""
    state = copy.deepcopy(state)
    for window in state["windows"].values():
        resets_at = parse_ts(window["resets_at"])
        if now >= resets_at:
            minutes = int(window["window_minutes"])
            # the next window starts at the first boundary not after now
            periods = int((now - resets_at) // timedelta(minutes=minutes)) + 1
            window["resets_at"] = _iso_seconds(resets_at + periods * timedelta(minutes=minutes))
            window["used_tokens"] = 0
            window["used_percent"] = 0
            window["reset_count"] = int(window.get("reset_count", 1)) + 1
            name = next(n for n, m, _ in WINDOWS if m == minutes)
            window["reset_id"] = f"{name}-{window['reset_count']}"
    return state


@dataclass(frozen=True)
class QuotaCharge:
    before: dict[str, Any]
    after: dict[str, Any]
    # per call: the state after that call (used for rate-limit snapshots in records)
    steps: list[dict[str, Any]]


def _consume(state: dict[str, Any], tokens: int) -> dict[str, Any]:
    state = copy.deepcopy(state)
    for window in state["windows"].values():
        window["used_tokens"] = int(window["used_tokens"]) + tokens
        window["used_percent"] = _percent(window["used_tokens"], int(window["budget_tokens"]))
    return state


def _write_atomic(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_quota(account_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((account_dir / QUOTA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def charge_quota(
    account_dir: Path, now: datetime, call_tokens: list[int], config: dict[str, Any]
) -> QuotaCharge:
    """Consume the episode's tokens call by call under the lock; returns the states."""
    account_dir.mkdir(parents=True, exist_ok=True)
    with open(account_dir / LOCK_FILE, "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            state = read_quota(account_dir) or new_quota(now, config)
            before = roll_windows(state, now)
            steps = []
            current = before
            for tokens in call_tokens:
                current = _consume(current, tokens)
                steps.append(current)
            after = copy.deepcopy(current)
            after["updated_at"] = _iso_seconds(now)
            _write_atomic(account_dir / QUOTA_FILE, after)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    return QuotaCharge(before=before, after=after, steps=steps)


def codex_rate_limits(state: dict[str, Any]) -> dict[str, Any]:
    """Codex ``token_count.rate_limits`` from a quota state (resets_at in unix seconds)."""

    def window(name: str) -> dict[str, Any]:
        w = state["windows"][name]
        return {
            "used_percent": float(w["used_percent"]),
            "window_minutes": int(w["window_minutes"]),
            "resets_at": int(parse_ts(w["resets_at"]).timestamp()),
        }

    return {"primary": window("five-hour"), "secondary": window("seven-day")}
