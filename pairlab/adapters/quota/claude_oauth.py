"""``claude-oauth-usage`` probe: the OAuth usage endpoint behind Claude Code's ``/usage``.

Response: ``{"five_hour": {"utilization", "resets_at" (ISO)}, "seven_day": {...},
"seven_day_opus": {...}, ...}`` with utilization on 0-100. The endpoint is rate
limited: poll once before and once after an episode. Model-scoped weekly windows
(``seven_day_opus``) are reported under provider ``claude:<scope>`` so they never
collide with the account-wide seven-day window.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from pairlab.adapters.quota.base import (
    now_utc,
    percent_or_none,
    unknown_observations,
    window_observation,
)
from pairlab.adapters.quota.http_fetch import fetch_json
from pairlab.adapters.usage.base import parse_instant
from pairlab.adapters.usage.claude import claude_window
from pairlab.core.schemas.quota import QuotaObservation

SOURCE: Final = "claude-oauth-usage"
DEFAULT_URL: Final = "https://api.anthropic.com/api/oauth/usage"


class ClaudeOAuthUsageProbe:
    name = "claude-oauth-usage"

    def __init__(
        self,
        url: str = DEFAULT_URL,
        token: str | None = None,
        timeout_s: float = 10.0,
        max_retry_wait_s: float = 5.0,
        ca_bundle: str | None = None,
    ) -> None:
        self.ca_bundle = ca_bundle  # an account's private CA (PEM), besides the public roots
        self.url, self.token = url, token
        self.timeout_s, self.max_retry_wait_s = timeout_s, max_retry_wait_s

    def snapshot(self) -> list[QuotaObservation]:
        if not self.token:
            return unknown_observations("claude", SOURCE, "no-token")
        headers = {
            "Authorization": f"Bearer {self.token}",
            "anthropic-beta": "oauth-2025-04-20",
            "Accept": "application/json",
        }
        result = fetch_json(
            self.url,
            headers,
            timeout_s=self.timeout_s,
            max_retry_wait_s=self.max_retry_wait_s,
            ca_bundle=self.ca_bundle,
        )
        if result.data is None:
            return unknown_observations("claude", SOURCE, result.failure or "unknown")
        at = now_utc()
        out: list[QuotaObservation] = []
        for key, value in sorted(result.data.items()):
            classified = claude_window(key)
            if classified is None or not isinstance(value, dict):
                continue
            out.append(_observation(value, *classified, at))
        return out or unknown_observations("claude", SOURCE, "no-windows")


def _observation(
    value: dict[str, Any], window: str, provider: str, at: datetime
) -> QuotaObservation:
    resets_at = parse_instant(value.get("resets_at"))
    used = percent_or_none(value.get("utilization"))
    return window_observation(
        provider=provider,
        window=window,
        used=used,
        resets_at=resets_at,
        observed_at=at,
        source=SOURCE,
    )
