"""``sim`` probe: the simulator's shared account quota ($PAIRLAB_SIM_ACCOUNT_DIR/quota.json).

Format (containers/simclient/README.md): ``{"provider", "account", "updated_at",
"windows": {"five-hour"|"seven-day": {"window_minutes", "used_percent" (whole
number), "precision_percent" (optional), "resets_at" (ISO UTC), "reset_id",
"reset_count", ...}}}``. The simulator rolls a window only when it next writes; a
window whose ``resets_at`` has passed is reported as the simulator would roll it
(0 %, next reset).

Only what the file states is reported: the window from its ``window_minutes``
(never from its key: no length, ``other:0``); the precision the file states
(``null`` = unknown), else the format's whole-number precision (1.0) for a whole
value and unknown for any other; a reset time that is an absolute instant.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

from pairlab.adapters.quota.base import now_utc, percent_or_none, unknown_observations
from pairlab.adapters.usage.base import parse_instant
from pairlab.core.schemas.quota import QuotaObservation, classify_window

SOURCE: Final = "sim"


class SimProbe:
    name = "sim"

    def __init__(self, account_dir: str | Path | None = None, provider: str = "sim") -> None:
        env = os.environ.get("PAIRLAB_SIM_ACCOUNT_DIR")
        self.account_dir = Path(account_dir) if account_dir else (Path(env) if env else None)
        self.provider = provider

    def snapshot(self) -> list[QuotaObservation]:
        if self.account_dir is None:
            return unknown_observations(self.provider, SOURCE, "no-account-dir")
        try:
            data = json.loads((self.account_dir / "quota.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return unknown_observations(self.provider, SOURCE, "no-quota-file")
        except (OSError, ValueError):
            return unknown_observations(self.provider, SOURCE, "unreadable")
        if not isinstance(data, dict) or not isinstance(data.get("windows"), dict):
            return unknown_observations(self.provider, SOURCE, "malformed")
        provider = data.get("provider") if isinstance(data.get("provider"), str) else None
        account = data.get("account") if isinstance(data.get("account"), str) else None
        at = now_utc()
        return [
            self._window(name, w, at, provider or self.provider, account)
            for name, w in sorted(data["windows"].items())
            if isinstance(w, dict)
        ]

    def _window(
        self, name: str, w: dict[str, Any], at: datetime, provider: str, account: str | None
    ) -> QuotaObservation:
        raw_minutes = w.get("window_minutes")
        minutes = (
            float(raw_minutes)
            if isinstance(raw_minutes, int | float) and not isinstance(raw_minutes, bool)
            else None
        )
        used = percent_or_none(w.get("used_percent"))
        resets_at = parse_instant(w.get("resets_at"))
        reset_id = w.get("reset_id") if isinstance(w.get("reset_id"), str) else None
        if resets_at is not None and at >= resets_at and minutes:
            periods = int((at - resets_at) // timedelta(minutes=minutes)) + 1
            resets_at = resets_at + periods * timedelta(minutes=minutes)
            used = 0.0
            count = w.get("reset_count")
            reset_id = f"{name}-{int(count) + 1}" if isinstance(count, int) else None
        return QuotaObservation(
            provider=provider,
            window=classify_window(minutes),
            used_percent=used,
            source_scale="percent",
            precision_percent=stated_precision(w, used),
            resets_at=resets_at,
            reset_id=reset_id,
            observed_at=at,
            source=f"{SOURCE}:quota.json",
            account=account,
        )


def stated_precision(window: dict[str, Any], used: float | None) -> float | None:
    """The file's ``precision_percent`` when it states one (``null``: unknown); else the
    documented whole-number format's 1.0, for a whole value only."""
    if "precision_percent" in window:
        value = window["precision_percent"]
        valid = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
        return float(value) if valid else None
    if used is None or not float(used).is_integer():
        return None
    return 1.0
