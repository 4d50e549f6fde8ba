"""The quota model written where the real CLIs and probes read it, at the real precision.

Each real source states utilization at whole-percent precision, so each surface
floors the model's exact fraction to a whole percent (never rounding up to a limit
not yet reached) and says no more than its source does:

| surface | reader | utilization | reset |
| --- | --- | --- | --- |
| ``anthropic-ratelimit-unified-{5h,7d}-*`` headers | Claude Code (OAuth) | fraction, 2 decimals (``0.42``) | epoch s |
| ``GET /api/oauth/usage`` | ``claude-oauth-usage`` probe | percent as a float (``42.0``) | ISO 8601 |
| ``x-codex-{primary,secondary}-*`` headers | Codex (rollout ``rate_limits``) | percent (``42``) | epoch s |
| ``GET /backend-api/wham/usage`` | ``codex-usage-endpoint`` probe | integer percent | epoch s |

A window that has not started (no request yet) has no reset time: the Anthropic
and Codex headers then leave its reset out, the usage endpoints give ``null``.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any, Final

from pairlab.core.emulator.quota_model import QuotaSnapshot, WindowSnapshot

WARNING_THRESHOLD: Final = 0.8
_ANTHROPIC_KEYS: Final = {"five_hour": "5h", "seven_day": "7d"}


def whole_percent(window: WindowSnapshot) -> int:
    """The utilization floored to a whole percent (what every real source shows)."""
    return min(100, math.floor(window.utilization * 100 + 1e-9))


def _status(window: WindowSnapshot) -> str:
    if window.utilization >= 1.0:
        return "rejected"
    if window.utilization >= WARNING_THRESHOLD:
        return "allowed_warning"
    return "allowed"


def anthropic_unified_headers(snapshot: QuotaSnapshot) -> dict[str, str]:
    """Anthropic's unified rate-limit headers (sent to subscription, i.e. OAuth, traffic)."""
    headers: dict[str, str] = {}
    for w in snapshot.windows:
        key = _ANTHROPIC_KEYS[w.window]
        headers[f"anthropic-ratelimit-unified-{key}-status"] = _status(w)
        headers[f"anthropic-ratelimit-unified-{key}-utilization"] = f"{whole_percent(w) / 100:.2f}"
        if w.resets_at is not None:
            headers[f"anthropic-ratelimit-unified-{key}-reset"] = str(w.resets_at)
    claim = max(snapshot.windows, key=lambda w: (w.utilization, w.window == "five_hour"))
    headers["anthropic-ratelimit-unified-status"] = _status(claim)
    headers["anthropic-ratelimit-unified-representative-claim"] = claim.window
    if claim.resets_at is not None:
        headers["anthropic-ratelimit-unified-reset"] = str(claim.resets_at)
    return headers


def _iso(epoch: int | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat()


def claude_oauth_usage(snapshot: QuotaSnapshot) -> dict[str, Any]:
    """The body of ``GET /api/oauth/usage`` (what Claude Code's ``/usage`` shows)."""
    return {
        w.window: {"utilization": float(whole_percent(w)), "resets_at": _iso(w.resets_at)}
        for w in snapshot.windows
    } | {"seven_day_opus": None, "seven_day_sonnet": None}


def codex_headers(snapshot: QuotaSnapshot) -> dict[str, str]:
    """``x-codex-primary-*`` (5-hour) and ``x-codex-secondary-*`` (7-day) headers."""
    headers: dict[str, str] = {}
    for slot, w in (("primary", snapshot.five_hour), ("secondary", snapshot.seven_day)):
        headers[f"x-codex-{slot}-used-percent"] = str(whole_percent(w))
        headers[f"x-codex-{slot}-window-minutes"] = str(w.length_s // 60)
        if w.resets_at is not None:
            headers[f"x-codex-{slot}-reset-at"] = str(w.resets_at)
    return headers


def codex_usage(snapshot: QuotaSnapshot) -> dict[str, Any]:
    """The body of ``GET /backend-api/wham/usage`` (what Codex's ``/status`` shows)."""

    def window(w: WindowSnapshot) -> dict[str, Any]:
        return {
            "used_percent": whole_percent(w),
            "limit_window_seconds": w.length_s,
            "reset_at": w.resets_at,
        }

    return {
        "plan_type": "emulated",
        "rate_limit": {
            "allowed": all(w.utilization < 1.0 for w in snapshot.windows),
            "limit_reached": any(w.utilization >= 1.0 for w in snapshot.windows),
            "primary_window": window(snapshot.five_hour),
            "secondary_window": window(snapshot.seven_day),
        },
    }


__all__ = [
    "anthropic_unified_headers",
    "claude_oauth_usage",
    "codex_headers",
    "codex_usage",
    "whole_percent",
]
