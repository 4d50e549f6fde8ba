"""Prompt caching as the providers document it, over :class:`PromptLayout` prefixes.

Anthropic (explicit ``cache_control`` breakpoints, TTL 5 minutes or 1 hour):

* A cache entry is a prefix ending at a breakpoint, written when a request carrying
  that breakpoint is processed; it lives for its TTL and every use refreshes it.
* Read: the longest *live* written prefix that ends at a block boundary the lookup
  reaches -- at a breakpoint or up to ``LOOKBACK_BLOCKS`` (20) blocks before one.
* Write: the span after the read prefix up to the last breakpoint, each part written
  with the TTL of the breakpoint that closes it (``ephemeral_5m`` / ``ephemeral_1h``).
  A prefix shorter than the model's minimum cacheable length (1,024 tokens) is not
  written.
* Uncached: everything else (``input_tokens``, which excludes cache reads and writes).

OpenAI (automatic): cached tokens = the longest prefix shared with an earlier *live*
request of the same ``prompt_cache_key``, matched block by block (one block per
input item), counted in 128-token increments and only from 1,024 tokens on. A prefix
stays live 5 minutes after its last use and at most 1 hour after it was first
written. OpenAI bills no cache writes: its write dimension is 0.

Both caches are plain in-memory state with the clock passed in (seconds), so the
emulator owns scoping (per account) and tests can move time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from pairlab.core.emulator.prompt_blocks import PromptLayout

LOOKBACK_BLOCKS: Final = 20
ANTHROPIC_MIN_CACHEABLE_TOKENS: Final = 1024
OPENAI_MIN_CACHED_TOKENS: Final = 1024
OPENAI_CACHE_INCREMENT: Final = 128
OPENAI_IDLE_TTL_S: Final = 300.0
OPENAI_MAX_TTL_S: Final = 3600.0


@dataclass(frozen=True)
class CacheUsage:
    """Where a request's input tokens went. ``uncached + read + writes == total``."""

    total: int
    uncached: int
    cache_read: int
    cache_write_5m: int = 0
    cache_write_1h: int = 0


@dataclass
class AnthropicPromptCache:
    """One cache scope (the emulator keeps one per account)."""

    min_tokens: int = ANTHROPIC_MIN_CACHEABLE_TOKENS
    expires_at: dict[str, float] = field(default_factory=dict)

    def _live(self, digest: str, now: float) -> bool:
        return self.expires_at.get(digest, float("-inf")) > now

    def lookup(self, layout: PromptLayout, now: float) -> int:
        """The boundary (block count) of the longest live prefix the lookup reaches."""
        digests = layout.prefix_digests
        reachable: set[int] = set()
        for bp in layout.breakpoints:
            reachable.update(range(max(1, bp.boundary - LOOKBACK_BLOCKS), bp.boundary + 1))
        for boundary in sorted(reachable, reverse=True):
            if self._live(digests[boundary], now):
                return boundary
        return 0

    def process(self, layout: PromptLayout, now: float, *, commit: bool = True) -> CacheUsage:
        """Account one request and apply its writes and refreshes (``commit=False``: only
        account it, for a request that will leave no trace, e.g. cut before any event)."""
        if not commit:
            return AnthropicPromptCache(self.min_tokens, dict(self.expires_at)).process(layout, now)
        cum, digests = layout.cumulative_tokens, layout.prefix_digests
        read_end = self.lookup(layout, now)
        writes = {300: 0, 3600: 0}
        cursor = read_end
        for bp in sorted(layout.breakpoints, key=lambda b: b.boundary):
            digest = digests[bp.boundary]
            if bp.boundary <= cursor:
                if self._live(digest, now):  # a use refreshes the entry
                    self.expires_at[digest] = max(self.expires_at[digest], now + bp.ttl_s)
                continue
            if cum[bp.boundary] < self.min_tokens:
                continue  # too short to cache; a later breakpoint may still cover it
            writes[bp.ttl_s] += cum[bp.boundary] - cum[cursor]
            self.expires_at[digest] = max(self.expires_at.get(digest, now), now + bp.ttl_s)
            cursor = bp.boundary
        if read_end:
            digest = digests[read_end]
            ttl = max((bp.ttl_s for bp in layout.breakpoints), default=300)
            self.expires_at[digest] = max(self.expires_at[digest], now + ttl)
        read = cum[read_end]
        total = layout.total_tokens
        return CacheUsage(
            total=total,
            uncached=total - read - writes[300] - writes[3600],
            cache_read=read,
            cache_write_5m=writes[300],
            cache_write_1h=writes[3600],
        )

    def expire(self, now: float) -> None:
        """Drop dead entries (memory only: dead entries never match anyway)."""
        self.expires_at = {d: t for d, t in self.expires_at.items() if t > now}


@dataclass
class _OpenAIEntry:
    first_written: float
    last_used: float


@dataclass
class OpenAIPromptCache:
    """Prefixes of earlier requests, per ``prompt_cache_key`` (one instance per account)."""

    idle_ttl_s: float = OPENAI_IDLE_TTL_S
    max_ttl_s: float = OPENAI_MAX_TTL_S
    entries: dict[tuple[str, str], _OpenAIEntry] = field(default_factory=dict)

    def _live(self, entry: _OpenAIEntry | None, now: float) -> bool:
        return (
            entry is not None
            and now < entry.last_used + self.idle_ttl_s
            and now < entry.first_written + self.max_ttl_s
        )

    def process(self, layout: PromptLayout, key: str | None, now: float) -> CacheUsage:
        scope = key or ""
        cum, digests = layout.cumulative_tokens, layout.prefix_digests
        shared = 0
        for boundary in range(len(layout.blocks), 0, -1):
            if self._live(self.entries.get((scope, digests[boundary])), now):
                shared = cum[boundary]
                break
        cached = 0
        if shared >= OPENAI_MIN_CACHED_TOKENS:
            cached = shared - shared % OPENAI_CACHE_INCREMENT
        for boundary in range(1, len(layout.blocks) + 1):
            entry = self.entries.get((scope, digests[boundary]))
            if self._live(entry, now):
                assert entry is not None
                entry.last_used = now
            else:
                self.entries[(scope, digests[boundary])] = _OpenAIEntry(now, now)
        total = layout.total_tokens
        return CacheUsage(total=total, uncached=total - cached, cache_read=cached)

    def expire(self, now: float) -> None:
        self.entries = {k: e for k, e in self.entries.items() if self._live(e, now)}


__all__ = [
    "ANTHROPIC_MIN_CACHEABLE_TOKENS",
    "LOOKBACK_BLOCKS",
    "OPENAI_CACHE_INCREMENT",
    "OPENAI_MIN_CACHED_TOKENS",
    "AnthropicPromptCache",
    "CacheUsage",
    "OpenAIPromptCache",
]
