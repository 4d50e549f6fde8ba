"""``no-window`` probe: an account billed per token (an API key) has no subscription window.

Every snapshot says so explicitly: the five-hour and seven-day windows are unknown with
the source ``no-window:unavailable:api-key-no-subscription-window`` (never 0 %), so a
record, the report and a percent ceiling read "no window", not "nothing used".
"""

from __future__ import annotations

from typing import Final

from pairlab.adapters.quota.base import unknown_observations
from pairlab.core.schemas.quota import QuotaObservation

SOURCE: Final = "no-window"
REASON: Final = "api-key-no-subscription-window"


class NoWindowProbe:
    name = "no-window"

    def __init__(self, provider: str = "claude") -> None:
        self.provider = provider

    def snapshot(self) -> list[QuotaObservation]:
        return unknown_observations(self.provider, SOURCE, REASON)
