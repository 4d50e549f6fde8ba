"""``command`` probe: runs an operator's command that prints quota observations.

What the command prints is read according to ``format``:

* ``observations`` (default): JSON, a list of observation objects or
  ``{"observations": [...]}``. Missing ``provider``/``source``/``observed_at``
  are filled from the probe's options and the clock; ``scale: "fraction"``
  values (0-1) are converted to percent and the source scale is recorded.
  Nothing else is filled in: without ``precision_percent`` the precision is
  unknown, and without both ``reset_id`` and ``resets_at`` (with an offset) no
  consumption can exclude a reset (issue 16: null, ``quota-reset-crossing``).
* ``claude-statusline``: the JSON payload Claude Code gives a ``statusLine``
  command (e.g. ``cat`` of a file a status-line script saved it to);
* ``anthropic-headers``: HTTP response headers as ``curl -D -`` prints them
  (see :mod:`pairlab.adapters.quota.claude_formats` for both).

A source that carries no quota at all (a status line without ``rate_limits``,
headers without a unified rate limit) gives explicit unknowns, never zeros.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Sequence
from typing import Any, Final, Literal

from pydantic import ValidationError

from pairlab.adapters.quota.base import now_utc, unknown_observations
from pairlab.adapters.quota.claude_formats import (
    header_observations,
    parse_header_lines,
    statusline_observations,
)
from pairlab.core.schemas.quota import QuotaObservation

SOURCE: Final = "command"
Format = Literal["observations", "claude-statusline", "anthropic-headers"]
FORMATS: Final = ("observations", "claude-statusline", "anthropic-headers")


class CommandProbe:
    name = "command"

    def __init__(
        self,
        argv: Sequence[str] | str,
        provider: str = "unknown",
        timeout_s: float = 30.0,
        windows: Sequence[str] = ("five-hour", "seven-day"),
        format: Format = "observations",
    ) -> None:
        if format not in FORMATS:
            raise ValueError(f"unknown command probe format {format!r}; expected one of {FORMATS}")
        self.argv = shlex.split(argv) if isinstance(argv, str) else list(argv)
        self.provider, self.timeout_s, self.windows = provider, timeout_s, tuple(windows)
        self.format = format
        if format != "observations" and provider == "unknown":
            self.provider = "claude"

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
        if self.format == "anthropic-headers":
            try:
                observed = header_observations(parse_header_lines(done.stdout), now_utc())
            except (ValidationError, TypeError, ValueError):
                return self._unknown("malformed")
            return observed or self._unknown("no-unified-headers")
        try:
            data = json.loads(done.stdout)
        except ValueError:
            return self._unknown("malformed")
        if self.format == "claude-statusline":
            try:
                observed = statusline_observations(data, now_utc())
            except (ValidationError, TypeError, ValueError):
                return self._unknown("malformed")
            return observed or self._unknown("no-rate-limits")
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
