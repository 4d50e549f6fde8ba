"""Prompt caching as the providers document it (core.emulator.prompt_cache / prompt_blocks)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pairlab.core.emulator.prompt_blocks import (
    MalformedRequest,
    anthropic_layout,
    openai_layout,
)
from pairlab.core.emulator.prompt_cache import (
    AnthropicPromptCache,
    OpenAIPromptCache,
)


def words(text: str) -> int:
    """A transparent token count for these tests: one token per character."""
    return len(text)


def block(size: int, tag: str = "x", ttl: str | None = None) -> dict[str, Any]:
    text = tag * size
    out: dict[str, Any] = {"type": "text", "text": text}
    if ttl:
        out["cache_control"] = {"type": "ephemeral", "ttl": ttl}
    return out


def request(system: list[dict[str, Any]], turns: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "m",
        "max_tokens": 10,
        "system": system,
        "messages": [{"role": "user", "content": turns}],
    }


def test_blocks_come_in_provider_order_and_breakpoints_keep_their_ttl() -> None:
    body = request([block(2000, "s", "1h")], [block(50, "a"), block(60, "b", "5m")])
    body["tools"] = [
        {"name": "T", "input_schema": {}},
        {"name": "D", "input_schema": {}, "defer_loading": True},
    ]
    layout = anthropic_layout(body, words)
    assert [b.section for b in layout.blocks] == ["tools", "system", "messages", "messages"]
    assert [(bp.boundary, bp.ttl_s) for bp in layout.breakpoints] == [(2, 3600), (4, 300)]
    assert layout.total_tokens == sum(b.tokens for b in layout.blocks)


def test_moving_a_breakpoint_does_not_change_the_prompt() -> None:
    marked = anthropic_layout(request([block(10)], [block(5, "a", "5m")]), words)
    plain = anthropic_layout(request([block(10)], [block(5, "a")]), words)
    assert marked.prefix_digests == plain.prefix_digests


def test_first_request_writes_the_next_reads_and_writes_only_the_new_turn() -> None:
    cache = AnthropicPromptCache()
    first = anthropic_layout(request([block(3000)], [block(100, "a", "5m")]), words)
    usage1 = cache.process(first, now=0)
    assert (usage1.cache_read, usage1.cache_write_5m, usage1.uncached) == (0, first.total_tokens, 0)
    second = anthropic_layout(
        request([block(3000)], [block(100, "a"), block(80, "b", "5m")]), words
    )
    usage2 = cache.process(second, now=60)
    assert usage2.cache_read == first.total_tokens
    assert usage2.cache_write_5m == second.total_tokens - first.total_tokens
    assert usage2.uncached == 0


def test_an_entry_expires_after_its_ttl_and_a_read_refreshes_it() -> None:
    cache = AnthropicPromptCache()
    layout = anthropic_layout(request([block(3000, "s", "5m")], [block(10)]), words)
    cache.process(layout, now=0)
    assert cache.process(layout, now=299).cache_read > 0  # read at 299 s: refreshed to 599
    assert cache.process(layout, now=598).cache_read > 0
    assert cache.process(layout, now=598 + 301).cache_read == 0  # 5 minutes idle: gone


def test_one_hour_and_five_minute_writes_are_split_by_the_breakpoint_closing_them() -> None:
    cache = AnthropicPromptCache()
    layout = anthropic_layout(request([block(3000, "s", "1h")], [block(500, "a", "5m")]), words)
    usage = cache.process(layout, now=0)
    cum = layout.cumulative_tokens
    assert usage.cache_write_1h == cum[1] and usage.cache_write_5m == cum[2] - cum[1]
    usage = cache.process(layout, now=400)  # the 5m entry is gone, the 1h one lives
    assert usage.cache_read == cum[1] and usage.cache_write_5m == cum[2] - cum[1]


def test_a_prefix_shorter_than_the_minimum_is_not_written() -> None:
    cache = AnthropicPromptCache()
    small = anthropic_layout(request([block(500, "s", "5m")], [block(10)]), words)
    usage = cache.process(small, now=0)
    assert usage.cache_write_5m == 0 and usage.uncached == small.total_tokens


def test_the_lookup_reaches_only_twenty_blocks_back_from_a_breakpoint() -> None:
    cache = AnthropicPromptCache()
    base = [block(3000, "s")]
    first = anthropic_layout(request(base, [block(5, "a", "5m")]), words)
    cache.process(first, now=0)
    near = [block(5, "a"), *[block(5, str(i)) for i in range(19)]]
    near[-1] = {**near[-1], "cache_control": {"type": "ephemeral"}}
    assert cache.process(anthropic_layout(request(base, near), words), now=1).cache_read > 0
    far = [block(5, "a"), *[block(5, str(i)) for i in range(25)]]
    far[-1] = {**far[-1], "cache_control": {"type": "ephemeral"}}
    fresh = AnthropicPromptCache()
    fresh.process(first, now=0)
    assert fresh.process(anthropic_layout(request(base, far), words), now=1).cache_read == 0


def test_a_dry_run_accounts_without_leaving_a_trace() -> None:
    cache = AnthropicPromptCache()
    layout = anthropic_layout(request([block(3000, "s", "5m")], [block(10)]), words)
    assert cache.process(layout, now=0, commit=False).cache_write_5m > 0
    assert cache.process(layout, now=1).cache_read == 0


@pytest.mark.parametrize(
    ("system", "message"),
    [
        ([block(10, "a", "5m"), block(10, "b", "1h")], "ttl='1h'"),
        ([block(10, str(i), "5m") for i in range(5)], "maximum of 4"),
        ([{"type": "text", "text": "x", "cache_control": {"type": "persistent"}}], "ephemeral"),
    ],
)
def test_invalid_cache_control_is_refused_like_the_api(system: list[Any], message: str) -> None:
    with pytest.raises(MalformedRequest, match=message):
        anthropic_layout(request(system, [block(5)]), words)


def test_openai_caches_the_shared_prefix_of_the_same_key_in_128_token_steps() -> None:
    cache = OpenAIPromptCache()
    items = [{"role": "developer", "content": "d" * 1500}, {"role": "user", "content": "u" * 300}]
    first = openai_layout({"model": "m", "input": items}, words)
    assert cache.process(first, "k", now=0).cache_read == 0
    more = openai_layout({"model": "m", "input": [*items, {"role": "user", "content": "v"}]}, words)
    usage = cache.process(more, "k", now=10)
    shared = first.total_tokens
    assert usage.cache_read == shared - shared % 128 and usage.cache_read % 128 == 0
    assert usage.uncached == more.total_tokens - usage.cache_read
    assert cache.process(more, "other-key", now=11).cache_read == 0  # scoped by key
    assert cache.process(more, "k", now=10 + 301).cache_read == 0  # 5 minutes idle


def test_openai_does_not_cache_below_1024_tokens() -> None:
    cache = OpenAIPromptCache()
    layout = openai_layout({"model": "m", "input": "x" * 900}, words)
    cache.process(layout, "k", now=0)
    assert cache.process(layout, "k", now=1).cache_read == 0


@given(
    sizes=st.lists(st.integers(min_value=1, max_value=900), min_size=1, max_size=12),
    marks=st.lists(st.booleans(), min_size=12, max_size=12),
    gaps=st.lists(st.integers(min_value=0, max_value=700), min_size=3, max_size=3),
)
def test_input_is_always_split_exactly(
    sizes: list[int], marks: list[bool], gaps: list[int]
) -> None:
    """uncached + read + writes == total, nothing negative, whatever the breakpoints and timing."""
    turns = [
        block(n, chr(97 + i), "5m" if marks[i] and sum(marks[: i + 1]) <= 3 else None)
        for i, n in enumerate(sizes)
    ]
    cache, now = AnthropicPromptCache(), 0.0
    for gap in gaps:
        now += gap
        for k in range(1, len(turns) + 1):
            layout = anthropic_layout(request([block(1100, "s", "5m")], turns[:k]), words)
            u = cache.process(layout, now)
            assert min(u.uncached, u.cache_read, u.cache_write_5m, u.cache_write_1h) >= 0
            assert u.uncached + u.cache_read + u.cache_write_5m + u.cache_write_1h == u.total
