"""Quota probes: read a subscription's windows before and after an episode.

``make_probe(name, **options)`` builds one of: ``sim``, ``codex-rollout``,
``codex-usage-endpoint``, ``claude-oauth-usage``, ``command`` (which also reads
Claude's status-line JSON and Anthropic's unified rate-limit headers), ``no-window``
(an API-key account: no subscription window, said in every snapshot). Every probe's
``snapshot()`` never raises; an unavailable source yields explicit unknowns.
Continuity between consecutive snapshots: :func:`continuity_by_window`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pairlab.adapters.quota.base import QuotaProbe, continuity_by_window, unknown_observations
from pairlab.adapters.quota.claude_oauth import ClaudeOAuthUsageProbe
from pairlab.adapters.quota.codex_endpoint import CodexUsageEndpointProbe
from pairlab.adapters.quota.codex_rollout import CodexRolloutProbe
from pairlab.adapters.quota.command import CommandProbe
from pairlab.adapters.quota.no_window import NoWindowProbe
from pairlab.adapters.quota.sim import SimProbe
from pairlab.core.errors import InvalidInputError, ReasonCode

PROBES: dict[str, Callable[..., QuotaProbe]] = {
    "sim": SimProbe,
    "codex-rollout": CodexRolloutProbe,
    "codex-usage-endpoint": CodexUsageEndpointProbe,
    "claude-oauth-usage": ClaudeOAuthUsageProbe,
    "command": CommandProbe,
    "no-window": NoWindowProbe,
}


def make_probe(name: str, **options: Any) -> QuotaProbe:
    """A configured probe; an unknown name or bad options are invalid input."""
    factory = PROBES.get(name)
    if factory is None:
        raise InvalidInputError(
            f"unknown quota probe {name!r}; expected one of {', '.join(PROBES)}",
            reason=ReasonCode.INVALID_INPUT,
        )
    try:
        return factory(**options)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"bad options for quota probe {name!r}: {exc}", reason=ReasonCode.INVALID_INPUT
        ) from exc


__all__ = ["PROBES", "QuotaProbe", "continuity_by_window", "make_probe", "unknown_observations"]
