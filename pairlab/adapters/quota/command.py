"""``command`` probe: runs an operator's command that prints quota observations as JSON.

Accepted stdout: a list of observation objects, or ``{"observations": [...]}``.
Missing ``provider``/``source``/``observed_at`` are filled from the probe's
options and the clock; ``scale: "fraction"`` values (0-1) are converted to
percent and the source scale is recorded.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Sequence
from typing import Any, Final

from pydantic import ValidationError

from pairlab.adapters.quota.base import now_utc, unknown_observations
from pairlab.core.schemas.quota import QuotaObservation

SOURCE: Final = "command"


class CommandProbe:
    name = "command"

    def __init__(
        self,
        argv: Sequence[str] | str,
        provider: str = "unknown",
        timeout_s: float = 30.0,
        windows: Sequence[str] = ("five-hour", "seven-day"),
    ) -> None:
        self.argv = shlex.split(argv) if isinstance(argv, str) else list(argv)
        self.provider, self.timeout_s, self.windows = provider, timeout_s, tuple(windows)

    def _unknown(self, reason: str) -> list[QuotaObservation]:
        return unknown_observations(self.provider, SOURCE, reason, self.windows)

    def snapshot(self) -> list[QuotaObservation]:
        if not self.argv:
            return self._unknown("no-command")
        try:
            done = subprocess.run(
                self.argv, capture_output=True, text=True, timeout=self.timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            return self._unknown("timeout")
        except OSError:
            return self._unknown("not-runnable")
        if done.returncode != 0:
            return self._unknown(f"exit-{done.returncode}")
        try:
            data = json.loads(done.stdout)
        except ValueError:
            return self._unknown("malformed")
        items = data.get("observations") if isinstance(data, dict) else data
        if not isinstance(items, list):
            return self._unknown("malformed")
        try:
            return [self._observation(item) for item in items if isinstance(item, dict)]
        except (ValidationError, TypeError, ValueError):
            return self._unknown("malformed")

    def _observation(self, item: dict[str, Any]) -> QuotaObservation:
        fields = dict(item)
        if fields.pop("scale", None) == "fraction" and fields.get("used_percent") is not None:
            fields["used_percent"] = float(fields["used_percent"]) * 100.0
            fields["source_scale"] = "fraction"
        fields.setdefault("provider", self.provider)
        fields.setdefault("source", SOURCE)
        fields.setdefault("observed_at", now_utc().isoformat())
        return QuotaObservation.model_validate(fields, strict=False)
