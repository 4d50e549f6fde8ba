"""The simulated subscription quota shared by all episodes of one account.

``$PAIRLAB_SIM_ACCOUNT_DIR/quota.json`` holds a five-hour (300 min) and a
seven-day (10080 min) window. Each episode consumes its drawn billed tokens (times
its arm's ``quota_factor``) in both windows; ``used_percent`` is the whole-number
floor of used/budget (capped at 100), like the real percent sources. A window
whose ``resets_at`` has passed restarts at 0 with a new ``resets_at`` and
``reset_id``; ``quota.mid_episode_reset`` forces such a reset half-way through an
episode's calls. Every charge is numbered (``charge_seq`` in quota.json) and
logged to ``charges.jsonl`` with the episode id: the ground truth of who used
the account when. Updates hold an exclusive fcntl lock on ``quota.lock``, append
the log line, then replace quota.json atomically, so readers never see a torn
file. Format: containers/simclient/README.md.
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
CHARGES_FILE = "charges.jsonl"
WINDOWS = (
    ("five-hour", 300, "five_hour_budget_tokens"),
    ("seven-day", 10080, "seven_day_budget_tokens"),
)


def _iso_seconds(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _percent(used: int, budget: int) -> int:
    return min(100, used * 100 // budget) if budget > 0 else 100


def _precision(config: dict[str, Any]) -> int | None:
    """What quota.json states as each window's precision: 1 point, or null on demand."""
    return 1 if config["quota"].get("report_precision", True) else None


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
            "precision_percent": _precision(config),
        }
    return {
        "schema_version": 1,
        "provider": "sim",
        "account": "sim-account",
        "updated_at": _iso_seconds(now),
        "charge_seq": 0,
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


def force_reset(state: dict[str, Any], now: datetime, names: list[str]) -> dict[str, Any]:
    """Reset the named windows now, as if their ``resets_at`` had just passed (pure).

    The new window ends a full window after now, and never at the old window's reset
    time (an account opened in the same second would otherwise give both the same
    ``resets_at``): it is then one second later."""
    state = copy.deepcopy(state)
    old = {name: state["windows"][name]["resets_at"] for name in names if name in state["windows"]}
    for name in old:
        state["windows"][name]["resets_at"] = _iso_seconds(now)
    state = roll_windows(state, now)
    for name, previous in old.items():
        window = state["windows"][name]
        if window["resets_at"] == previous:
            window["resets_at"] = _iso_seconds(parse_ts(previous) + timedelta(seconds=1))
    return state


@dataclass(frozen=True)
class QuotaCharge:
    before: dict[str, Any]
    after: dict[str, Any]
    # per call: the state after that call (used for rate-limit snapshots in records)
    steps: list[dict[str, Any]]
    # the charge-log entry (seq, episode id, tokens charged, factor, windows reset)
    entry: dict[str, Any]


def _consume(state: dict[str, Any], tokens: int) -> dict[str, Any]:
    state = copy.deepcopy(state)
    for window in state["windows"].values():
        window["used_tokens"] = int(window["used_tokens"]) + tokens
        window["used_percent"] = _percent(window["used_tokens"], int(window["budget_tokens"]))
    return state


def _state_precision(state: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    for window in state["windows"].values():
        window["precision_percent"] = _precision(config)
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
    account_dir: Path,
    now: datetime,
    call_tokens: list[int],
    config: dict[str, Any],
    *,
    episode_id: str = "",
    quota_factor: float = 1.0,
    reset_windows: list[str] | None = None,
) -> QuotaCharge:
    """Consume the episode's tokens call by call under the lock; returns the states.

    Each call charges ``round(tokens x quota_factor)``; ``reset_windows`` are reset
    half-way through the calls (after the first ``len // 2``). The charge is logged
    to charges.jsonl before quota.json is replaced."""
    account_dir.mkdir(parents=True, exist_ok=True)
    charged = [round(tokens * quota_factor) for tokens in call_tokens]
    with open(account_dir / LOCK_FILE, "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            state = read_quota(account_dir) or new_quota(now, config)
            before = roll_windows(state, now)
            steps = []
            current = before
            for index, tokens in enumerate(charged):
                if reset_windows and index == len(charged) // 2:
                    current = force_reset(current, now, reset_windows)
                current = _consume(current, tokens)
                steps.append(current)
            after = _state_precision(copy.deepcopy(current), config)
            after["updated_at"] = _iso_seconds(now)
            after["charge_seq"] = int(before.get("charge_seq", 0)) + 1
            entry = {
                "seq": after["charge_seq"],
                "episode_id": episode_id,
                "at": _iso_seconds(now),
                "tokens": sum(charged),
                "quota_factor": quota_factor,
                "reset_windows": list(reset_windows or []),
            }
            with (account_dir / CHARGES_FILE).open("a", encoding="utf-8") as log:
                log.write(json.dumps(entry, sort_keys=True) + "\n")
            _write_atomic(account_dir / QUOTA_FILE, after)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    return QuotaCharge(before=before, after=after, steps=steps, entry=entry)


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
