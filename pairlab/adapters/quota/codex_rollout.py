"""``codex-rollout`` probe: the latest ``rate_limits`` in the newest rollout under CODEX_HOME."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from pairlab.adapters.quota.base import unknown_observations
from pairlab.adapters.usage.base import ReportBuilder, iter_json_lines, parse_time
from pairlab.adapters.usage.codex import limit_provider, rate_limit_observations
from pairlab.core.schemas.quota import QuotaObservation

SOURCE: Final = "codex-rollout"


def newest_rollout(codex_home: Path) -> Path | None:
    candidates: list[Path] = []
    for sub in ("sessions", "archived_sessions"):
        root = codex_home / sub
        if root.is_dir():
            candidates.extend(
                p for p in root.rglob("rollout-*") if p.name.endswith((".jsonl", ".jsonl.zst"))
            )
    if not candidates:
        return None
    return max(candidates, key=lambda p: (p.stat().st_mtime, p.name))


class CodexRolloutProbe:
    name = "codex-rollout"

    def __init__(self, codex_home: str | Path | None = None) -> None:
        env = os.environ.get("CODEX_HOME")
        self.codex_home = (
            Path(codex_home) if codex_home else Path(env) if env else Path.home() / ".codex"
        )

    def snapshot(self) -> list[QuotaObservation]:
        try:
            rollout = newest_rollout(self.codex_home)
        except OSError:
            return unknown_observations("codex", SOURCE, "unreadable")
        if rollout is None:
            return unknown_observations("codex", SOURCE, "no-rollout")
        scratch = ReportBuilder(provider="codex")
        # The latest rate_limits of each limit bucket (limit_id): a later line about another
        # bucket does not hide the account-wide windows.
        last: dict[str, tuple[dict[str, Any], datetime]] = {}
        # Only token_count events carry rate limits: other lines are skipped unparsed.
        for obj in iter_json_lines(rollout, scratch, ('"token_count"',)):
            payload = obj.get("payload")
            if obj.get("type") != "event_msg" or not isinstance(payload, dict):
                continue
            limits = payload.get("rate_limits")
            ts = parse_time(obj.get("timestamp"))
            if payload.get("type") == "token_count" and isinstance(limits, dict) and ts:
                last[limit_provider(limits.get("limit_id"))] = (limits, ts)
        source = f"{SOURCE}:{rollout.name}"
        latest = [
            obs
            for _, (limits, ts) in sorted(last.items())
            for obs in rate_limit_observations(limits, ts, source)
        ]
        return latest or unknown_observations("codex", SOURCE, "no-rate-limits")
