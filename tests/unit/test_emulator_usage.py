"""The usage a model response states (core.emulator.usage), read back to the 7 dimensions."""

from __future__ import annotations

import json

import pytest

from pairlab.core.emulator.prompt_cache import CacheUsage
from pairlab.core.emulator.usage import (
    anthropic_usage,
    anthropic_vector,
    openai_usage,
    openai_vector,
    output_tokens,
    produced_texts,
)


def chars(text: str) -> int:
    """A transparent token count for these tests: one token per character."""
    return len(text)


CACHE = CacheUsage(
    total=5000, uncached=700, cache_read=4000, cache_write_5m=200, cache_write_1h=100
)
TEXT = {"type": "text", "text": "Done."}
TOOL = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.py"}}


def test_output_counts_the_produced_text_and_arguments_never_ids_or_envelope() -> None:
    arguments = json.dumps({"file_path": "a.py"})
    assert output_tokens([TEXT, TOOL], chars) == len("Done.") + len(arguments)
    renamed = {**TOOL, "id": "toolu_" + "x" * 40, "name": "SomeOtherName"}
    assert output_tokens([TEXT, renamed], chars) == output_tokens([TEXT, TOOL], chars)
    assert output_tokens([], chars) == 1
    assert output_tokens([{"type": "text", "text": ""}], lambda _: 0) == 1


def test_every_openai_item_is_counted_on_what_it_produced() -> None:
    items = [
        {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "n", "arguments": "{}"},
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "c", "name": "p", "input": "*x"},
        {"type": "tool_search_call", "id": "t", "call_id": "c", "arguments": {"q": "r"}},
    ]
    assert [produced_texts(i) for i in items] == [["{}"], ["*x"], ['{"q": "r"}']]
    with pytest.raises(ValueError, match="web_search_call"):
        produced_texts({"type": "web_search_call"})


def test_anthropic_states_the_cache_split_and_thinking_only_when_asked() -> None:
    usage = anthropic_usage(CACHE, [TEXT, TOOL], chars)
    assert usage["input_tokens"] == 700 and usage["cache_read_input_tokens"] == 4000
    assert usage["cache_creation_input_tokens"] == 300
    assert usage["output_tokens"] == output_tokens([TEXT, TOOL], chars)
    assert "output_tokens_details" not in usage
    vector = anthropic_vector(usage)
    assert (vector.cache_write_5m, vector.cache_write_1h, vector.reasoning) == (200, 100, None)
    asked = anthropic_usage(CACHE, [TEXT], chars, anthropic_beta="x,thinking-token-count")
    assert asked["output_tokens_details"] == {"thinking_tokens": 0}
    assert anthropic_vector(asked).reasoning == 0  # a known zero, not unknown


def test_openai_counts_reasoning_inside_the_output_and_no_cache_write() -> None:
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "hm"}],
    }
    message = {"type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": "ok"}]}
    usage = openai_usage(CACHE, [reasoning, message], chars)
    assert usage["input_tokens"] == 5000 and usage["input_tokens_details"]["cached_tokens"] == 4000
    assert usage["output_tokens_details"]["reasoning_tokens"] == len("hm")
    assert usage["output_tokens"] == len("hm") + len("ok")
    assert usage["total_tokens"] == 5000 + usage["output_tokens"]
    vector = openai_vector(usage)
    assert (vector.uncached_input, vector.cache_read, vector.cache_write_generic) == (1000, 4000, 0)
    assert vector.reasoning == usage["output_tokens_details"]["reasoning_tokens"]
