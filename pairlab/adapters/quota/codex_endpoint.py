"""``codex-usage-endpoint`` probe: the ChatGPT backend usage endpoint Codex's /status reads.

Response: ``{"rate_limit": {"primary_window": {"used_percent", "limit_window_seconds",
"reset_at" (epoch s)}, "secondary_window": {...}}}``; windows classified by length.
"""

from __future__ import annotations

from typing import Any, Final

from pairlab.adapters.quota.base import (
    now_utc,
    percent_or_none,
    unknown_observations,
    window_observation,
)
from pairlab.adapters.quota.http_fetch import fetch_json
from pairlab.adapters.usage.base import parse_instant
from pairlab.core.schemas.quota import QuotaObservation, classify_window

SOURCE: Final = "codex-usage-endpoint"
DEFAULT_URL: Final = "https://chatgpt.com/backend-api/wham/usage"


class CodexUsageEndpointProbe:
    name = "codex-usage-endpoint"

    def __init__(
        self,
        url: str = DEFAULT_URL,
        token: str | None = None,
        account_id: str | None = None,
        timeout_s: float = 10.0,
        max_retry_wait_s: float = 5.0,
        ca_bundle: str | None = None,
    ) -> None:
        self.ca_bundle = ca_bundle  # an account's private CA (PEM), besides the public roots
        self.url, self.token, self.account_id = url, token, account_id
        self.timeout_s, self.max_retry_wait_s = timeout_s, max_retry_wait_s

    def snapshot(self) -> list[QuotaObservation]:
        if not self.token:
            return unknown_observations("codex", SOURCE, "no-token")
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if self.account_id:
            headers["ChatGPT-Account-Id"] = self.account_id
        result = fetch_json(
            self.url,
            headers,
            timeout_s=self.timeout_s,
            max_retry_wait_s=self.max_retry_wait_s,
            ca_bundle=self.ca_bundle,
        )
        if result.data is None:
            return unknown_observations("codex", SOURCE, result.failure or "unknown")
        limits = result.data.get("rate_limit")
        if not isinstance(limits, dict):
            return unknown_observations("codex", SOURCE, "no-rate-limit")
        at = now_utc()
        out = [
            _observation(w, at)
            for key in ("primary_window", "secondary_window")
            if isinstance(w := limits.get(key), dict)
        ]
        return out or unknown_observations("codex", SOURCE, "no-windows")


def _observation(w: dict[str, Any], at: Any) -> QuotaObservation:
    seconds = w.get("limit_window_seconds")
    minutes = float(seconds) / 60 if isinstance(seconds, int | float) else None
    used = percent_or_none(w.get("used_percent"))
    return window_observation(
        provider="codex",
        window=classify_window(minutes),
        used=used,
        resets_at=parse_instant(w.get("reset_at")),
        observed_at=at,
        source=SOURCE,
    )
