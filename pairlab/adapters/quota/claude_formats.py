"""Two more Claude quota sources (CLIENTS.md, Quota sources), read from text an
operator's command prints (``command`` probe, ``format=...``):

* ``claude-statusline``: the JSON Claude Code pipes to a ``statusLine`` command
  (v2.1.80 and later, Claude.ai subscribers, after the session's first response):
  ``rate_limits.{five_hour,seven_day}.{used_percentage (0-100), resets_at}``,
  ``resets_at`` as epoch seconds or ISO text. Some versions leave ``rate_limits``
  out altogether; that is an explicit unknown, never zero.
* ``anthropic-headers``: HTTP response headers (``curl -D -`` style, any case)
  ``anthropic-ratelimit-unified-{5h,7d}[-<scope>]-{utilization,reset}`` with the
  utilization a **fraction 0-1** and the reset in epoch seconds; the response's
  ``date`` header, when present, is the observation time.

The same unified utilization reaches a session's stream-json output as a
``rate_limit_event`` line; the Claude usage reader turns it into observations
(:func:`pairlab.adapters.usage.claude.rate_limit_event_observations`).

Windows are classified by their length (``5h`` = 300 min, ``7d`` = 10,080 min);
a scoped window (``seven_day_sonnet``, ``7d-sonnet``) is reported under provider
``claude:<scope>``, as the OAuth usage probe does, so it never collides with the
account-wide window. An out-of-range value is kept as an unknown value (None),
not clamped.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Final

from pairlab.adapters.quota.base import percent_or_none, window_observation
from pairlab.adapters.usage.base import parse_instant
from pairlab.adapters.usage.claude import claude_provider, claude_window, fraction_percent
from pairlab.core.schemas.quota import QuotaObservation, classify_window

STATUSLINE_SOURCE: Final = "claude-statusline"
HEADERS_SOURCE: Final = "anthropic-unified-headers"
_HEADER_MINUTES: Final = {"5h": 300, "7d": 10080}
_HEADER = re.compile(
    r"^anthropic-ratelimit-unified-(?P<window>5h|7d)(?:[-_](?P<scope>[a-z0-9_]+?))?"
    r"-(?P<field>utilization|reset)$"
)


def statusline_observations(payload: object, observed_at: datetime) -> list[QuotaObservation]:
    """Observations from a status-line payload (empty when it carries no rate limits)."""
    limits = payload.get("rate_limits") if isinstance(payload, dict) else None
    if not isinstance(limits, dict):
        return []
    out = []
    for key, value in sorted(limits.items()):
        classified = claude_window(key)  # the same keys as the OAuth usage endpoint's
        if classified is None or not isinstance(value, dict):
            continue
        window, provider = classified
        out.append(
            window_observation(
                provider=provider,
                window=window,
                used=percent_or_none(value.get("used_percentage")),
                resets_at=parse_instant(value.get("resets_at")),
                observed_at=observed_at,
                source=STATUSLINE_SOURCE,
            )
        )
    return out


def parse_header_lines(text: str) -> dict[str, str]:
    """``name: value`` lines (status lines and blanks skipped) -> lower-cased names.

    With several responses in one dump (redirects, ``100 Continue``), the last
    value of a header wins."""
    headers: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name and not name.startswith((" ", "\t")) and " " not in name.strip():
            headers[name.strip().lower()] = value.strip()
    return headers


def header_observations(
    headers: Mapping[str, str], fallback_observed_at: datetime
) -> list[QuotaObservation]:
    """Observations from response headers (empty when there is no unified header)."""
    fields: dict[tuple[str, str | None], dict[str, str]] = {}
    for name, value in headers.items():
        match = _HEADER.match(name.lower())
        if match:
            key = (match.group("window"), match.group("scope"))
            fields.setdefault(key, {})[match.group("field")] = value
    observed_at = fallback_observed_at
    if "date" in headers:
        with contextlib.suppress(TypeError, ValueError):
            dated = parsedate_to_datetime(headers["date"])
            observed_at = dated if dated.tzinfo else dated.replace(tzinfo=UTC)  # "-0000"
    out = []
    for (window, scope), got in sorted(fields.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        used, precision = fraction_percent(got.get("utilization", ""))
        out.append(
            window_observation(
                provider=claude_provider(scope),
                window=classify_window(_HEADER_MINUTES[window]),
                used=used,
                resets_at=_epoch(got.get("reset")),
                observed_at=observed_at,
                source=HEADERS_SOURCE,
                source_scale="fraction",
                precision=precision,
            )
        )
    return out


def _epoch(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return parse_instant(float(text))
    except ValueError:
        return parse_instant(text)
