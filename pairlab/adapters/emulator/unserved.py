"""A path the emulator does not serve: whose API the client thought it was calling, and
the 404 that API answers.

Each provider answers an unknown path in its own shape, with its own request-id
header (``anthropic_wire`` / ``openai_wire``): Anthropic
``{"type": "error", "error": {"type": "not_found_error", ...}, "request_id"}`` and
``request-id``; OpenAI ``{"error": {"message": "Invalid URL (...)", "type":
"invalid_request_error", "param": null, "code": null}}`` and ``x-request-id``.

The provider is read from the request, first match wins:

1. a path only one provider has: OpenAI ``/responses``, ``/chat/completions``,
   ``/completions``, ``/embeddings``, ``/backend-api/``; Anthropic ``/messages``,
   ``/complete``, ``/api/oauth/``;
2. an Anthropic client's headers (``anthropic-version``, ``anthropic-beta``,
   ``x-api-key``: both the ``anthropic`` SDK and Claude Code send ``anthropic-version``);
3. a bearer credential without them (the ``openai`` SDK, Codex);
4. otherwise Anthropic (a bare ``curl`` of ``/v1/models``).

Paths both APIs have (``/v1/models``, ``/v1/files``) are told apart by steps 2-3.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from pairlab.adapters.emulator.providers import Provider
from pairlab.adapters.emulator.reply import Refusal

_OPENAI_ONLY: Final = ("/responses", "/chat/completions", "/completions", "/embeddings")
_ANTHROPIC_ONLY: Final = ("/messages", "/complete", "/api/oauth/")
_ANTHROPIC_HEADERS: Final = ("anthropic-version", "anthropic-beta", "x-api-key")


def provider_of(path: str, headers: Mapping[str, str]) -> Provider:
    """The provider whose API a request to ``path`` meant (headers lower-cased)."""
    if "/backend-api/" in f"{path}/" or any(p in path for p in _OPENAI_ONLY):
        return "openai"
    if any(p in f"{path}/" for p in _ANTHROPIC_ONLY):
        return "anthropic"
    if any(h in headers for h in _ANTHROPIC_HEADERS):
        return "anthropic"
    if headers.get("authorization", "").lower().startswith("bearer "):
        return "openai"
    return "anthropic"


def not_found(provider: Provider, method: str, path: str, detail: str | None = None) -> Refusal:
    """The provider's 404 for ``method path`` (``detail`` replaces the default reason)."""
    reason = detail or "not served by the provider emulator"
    if provider == "openai":
        return Refusal(404, "invalid_request_error", f"Invalid URL ({method} {path}): {reason}")
    return Refusal(404, "not_found_error", f"{method} {path}: {reason}")


__all__ = ["not_found", "provider_of"]
