"""The emulator's wire formats, checked by clients nobody here wrote: the official
``anthropic`` and ``openai`` Python SDKs drive whole scripted episodes over real HTTP,
and every SSE event is validated against the SDKs' own event types."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import anthropic
import httpx
import openai
import pytest
from anthropic.types import RawMessageStreamEvent
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from pairlab.adapters.emulator import EpisodeHandle, EpisodeRegistration, Fault, ProviderEmulator
from pairlab.adapters.emulator.catalog_scripts import task_script
from pairlab.core.emulator.request_ledger import ground_truth
from tests.emulator_support import (
    CWD,
    claude_request,
    claude_tool_result,
    codex_output_for,
    codex_request,
    sse_events,
)
from tests.support import CATALOG_DIR


def _by_type(union: Any) -> dict[str, Any]:
    """The SDK's event classes by their ``type`` literal (validation names the class)."""
    while get_origin(union) is Annotated:
        union = get_args(union)[0]
    return {get_args(cls.model_fields["type"].annotation)[0]: cls for cls in get_args(union)}


ANTHROPIC_EVENTS = _by_type(RawMessageStreamEvent)
OPENAI_EVENTS = _by_type(ResponseStreamEvent)


def _validate(events: dict[str, Any], name: str, data: dict[str, Any]) -> None:
    assert name in events, f"{name} is not an event the SDK knows"
    assert TypeAdapter(events[name]).validate_python(data).type == name


PROMPT = "Fix median() in stats.py."


CLIENTS: list[anthropic.Anthropic | openai.OpenAI] = []


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    with ProviderEmulator(tmp_path_factory.mktemp("ledgers"), catalog_dir=CATALOG_DIR) as emu:
        yield emu
        while CLIENTS:  # their kept-alive connections
            CLIENTS.pop().close()


def _claude(
    emulator: ProviderEmulator, reg: EpisodeRegistration, retries: int = 0
) -> tuple[anthropic.Anthropic, EpisodeHandle]:
    ep = emulator.register_episode(reg)
    client = anthropic.Anthropic(base_url=ep.base_url(), api_key="sk-ant-test", max_retries=retries)
    CLIENTS.append(client)
    return client, ep


def _openai(
    emulator: ProviderEmulator, reg: EpisodeRegistration, retries: int = 0
) -> tuple[openai.OpenAI, EpisodeHandle]:
    ep = emulator.register_episode(reg)
    client = openai.OpenAI(base_url=ep.base_url() + "/v1", api_key="sk-test", max_retries=retries)
    CLIENTS.append(client)
    return client, ep


def _tool_output(call: Any) -> str:
    return f"(output of {call.name})"


def test_anthropic_sdk_plays_a_whole_scripted_episode(emulator: ProviderEmulator) -> None:
    client, episode = _claude(
        emulator, EpisodeRegistration(task_id="fix-median", seed=0, wrong_probability=0)
    )
    history: list[dict[str, Any]] = []
    calls: list[str] = []
    for _ in range(12):
        with client.messages.stream(**claude_request(PROMPT, history)) as stream:
            final = stream.get_final_message()
        uses = [b for b in final.content if b.type == "tool_use"]
        if not uses:
            assert final.stop_reason == "end_turn"
            answer = "".join(b.text for b in final.content if b.type == "text")
            break
        assert final.stop_reason == "tool_use"
        calls.append(uses[0].name)
        history += claude_tool_result(uses[0].model_dump(), _tool_output(uses[0]))
    else:
        pytest.fail("the scripted episode did not finish in 12 turns")
    script = task_script("fix-median", CATALOG_DIR)
    assert answer == script.final_answer
    assert "Edit" in calls and calls.index("Read") < calls.index("Edit")
    edit = next(
        h for h in history if h["role"] == "assistant" and h["content"][0]["name"] == "Edit"
    )
    args = edit["content"][0]["input"]
    change = script.changes[0]
    assert args["file_path"] == f"{CWD}/{change.path}"
    assert change.before is not None
    assert change.before.replace(args["old_string"], args["new_string"], 1) == change.after
    # the SDK's final usage is the ledger's, request by request
    rows = episode.rows()
    assert [r.turn.action if r.turn else None for r in rows] == [*calls, "final-answer"]
    assert all(r.billed and r.delivered for r in rows)
    assert rows[-1].usage_wire == final.usage.model_dump(exclude_none=True) | {
        "service_tier": "standard"
    }


def test_every_anthropic_event_validates_and_usage_adds_up(emulator: ProviderEmulator) -> None:
    ep = emulator.register_episode(
        EpisodeRegistration(task_id="fix-median", seed=2, wrong_probability=0)
    )
    body = {**claude_request(PROMPT), "stream": True}
    with httpx.Client() as http:
        response = http.post(
            ep.base_url() + "/v1/messages",
            json=body,
            headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
        )
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    events = sse_events(response.text)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    for name, data in events:
        if name == "ping":  # documented keep-alive; not one of the SDK's message events
            assert data == {"type": "ping"}
            continue
        _validate(ANTHROPIC_EVENTS, name, data)
    deltas = [
        d
        for n, d in events
        if n == "content_block_delta" and d["delta"]["type"] == "input_json_delta"
    ]
    assert deltas, "a tool_use block streams its input as input_json_delta"
    row = ep.rows()[-1]
    usage = events[-2][1]["usage"]
    assert usage == row.usage_wire
    total = row.input_tokens_total
    split = usage["cache_creation"]
    assert (
        usage["input_tokens"]
        + usage["cache_read_input_tokens"]
        + usage["cache_creation_input_tokens"]
        == total
    )
    assert (
        split["ephemeral_5m_input_tokens"] + split["ephemeral_1h_input_tokens"]
        == usage["cache_creation_input_tokens"]
    )


def test_non_streaming_fallback_and_count_tokens(emulator: ProviderEmulator) -> None:
    client, episode = _claude(
        emulator, EpisodeRegistration(task_id="fix-median", seed=2, wrong_probability=0)
    )
    request = claude_request(PROMPT)
    counted = client.messages.count_tokens(
        model=request["model"],
        system=request["system"],
        tools=request["tools"],
        messages=request["messages"],
    )
    message = client.messages.create(**request)
    assert message.content[-1].type == "tool_use"
    rows = episode.rows()
    count_row, model_row = rows
    assert count_row.path.endswith("/count_tokens") and not count_row.billed
    assert counted.input_tokens == count_row.input_tokens_total == model_row.input_tokens_total
    assert model_row.stream is False and model_row.billed


def test_the_second_request_reads_what_the_first_wrote(emulator: ProviderEmulator) -> None:
    client, _ = _claude(
        emulator, EpisodeRegistration(task_id="fix-median", seed=2, account="cache-check")
    )
    first = client.messages.create(**claude_request(PROMPT))
    use = next(b for b in first.content if b.type == "tool_use")
    second = client.messages.create(
        **claude_request(PROMPT, claude_tool_result(use.model_dump(), "text"))
    )
    written = first.usage.cache_creation_input_tokens or 0
    assert written > 1024 and first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == written  # the whole earlier prefix is read
    assert (second.usage.cache_creation_input_tokens or 0) > 0  # the new turn is written


def test_openai_sdk_plays_a_whole_treated_episode(emulator: ProviderEmulator) -> None:
    """tool_search, a namespaced MCP call, reasoning, commentary, apply_patch, the answer."""
    client, episode = _openai(
        emulator, EpisodeRegistration(task_id="fix-median", seed=2, wrong_probability=0)
    )
    history: list[dict[str, Any]] = []
    seen: list[str] = []
    for _ in range(12):
        with client.responses.stream(
            **_without_stream(codex_request(PROMPT, history, search=True))
        ) as stream:
            final = stream.get_final_response()
        assert final.model == "gpt-emulated-1" and final.status == "completed"
        calls = [
            i
            for i in final.output
            if i.type in ("function_call", "custom_tool_call", "tool_search_call")
        ]
        if not calls:
            break
        item = calls[0].model_dump(exclude_none=True)
        seen.append(item.get("namespace", "") + "/" + item.get("name", item["type"]))
        history += [i.model_dump(exclude_none=True) for i in final.output]
        history.append(codex_output_for(item))
    else:
        pytest.fail("the scripted episode did not finish in 12 turns")
    assert seen[0] == "/tool_search_call"
    assert "mcp__token_optimizer/read_file" in seen and "/apply_patch" in seen
    assert final.output_text == task_script("fix-median", CATALOG_DIR).final_answer
    rows = episode.rows()
    assert (
        rows[-1].usage_wire == final.usage.model_dump(exclude_none=True) if final.usage else False
    )
    assert ground_truth(rows).cache_read and ground_truth(rows).cache_read % 128 == 0


def _without_stream(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "stream"}


def test_every_openai_event_validates_and_echoes_the_model(emulator: ProviderEmulator) -> None:
    ep = emulator.register_episode(
        EpisodeRegistration(task_id="fix-median", seed=0, wrong_probability=0)
    )
    history: list[dict[str, Any]] = []
    kinds: set[str] = set()
    with httpx.Client() as http:
        for _ in range(10):
            response = http.post(
                ep.base_url() + "/v1/responses", json=codex_request(PROMPT, history)
            )
            assert response.status_code == 200
            assert response.headers["openai-model"] == "gpt-emulated-1"
            events = sse_events(response.text)
            for name, data in events:
                _validate(OPENAI_EVENTS, name, data)
                kinds.add(name)
            sequence = [data["sequence_number"] for _, data in events]
            assert sequence == list(range(len(events)))
            done = events[-1][1]["response"]
            calls = [
                i for i in done["output"] if i["type"] in ("function_call", "custom_tool_call")
            ]
            if not calls:
                break
            history += done["output"] + [codex_output_for(calls[0])]
    assert {
        "response.created",
        "response.output_item.added",
        "response.output_item.done",
        "response.reasoning_summary_text.delta",
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.custom_tool_call_input.delta",
        "response.completed",
    } <= kinds


def test_malformed_requests_get_the_providers_own_error_shapes(emulator: ProviderEmulator) -> None:
    aclient, aepisode = _claude(emulator, EpisodeRegistration(task_id="fix-median"))
    bad_ttl = claude_request(PROMPT)
    bad_ttl["system"] = [
        {"type": "text", "text": "a", "cache_control": {"type": "ephemeral", "ttl": "5m"}},
        {"type": "text", "text": "b", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
    ]
    with pytest.raises(anthropic.BadRequestError) as refused:
        aclient.messages.create(**bad_ttl)
    assert refused.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert "ttl" in refused.value.message
    with httpx.Client() as http:
        raw = http.post(aepisode.base_url() + "/v1/messages", content=b"{not json")
    assert raw.status_code == 400 and raw.json()["type"] == "error"
    oclient, oepisode = _openai(emulator, EpisodeRegistration(task_id="fix-median"))
    with pytest.raises(openai.BadRequestError) as bad:
        oclient.responses.create(model="m", input=[{"role": "user"}, "not an object"])  # type: ignore[list-item]
    assert bad.value.body["type"] == "invalid_request_error"  # type: ignore[index]
    arows = aepisode.rows()
    orows = oepisode.rows()
    assert [r.status for r in arows] == [400, 400] and not any(r.billed for r in arows)
    assert [r.error_type for r in orows] == ["invalid_request_error"]


def test_faults_exercise_the_sdks_own_retries(emulator: ProviderEmulator) -> None:
    faults = [
        Fault(at_request=0, kind="rate-limit-429", retry_after_s=0),
        Fault(at_request=1, kind="overloaded-529"),
    ]
    client, _ = _claude(
        emulator, EpisodeRegistration(task_id="fix-median", seed=2, faults=faults), retries=0
    )
    with pytest.raises(anthropic.RateLimitError) as limited:
        client.messages.create(**claude_request(PROMPT))
    assert limited.value.response.headers["retry-after"] == "0"
    with pytest.raises(anthropic.InternalServerError) as overloaded:
        client.messages.create(**claude_request(PROMPT))
    assert overloaded.value.status_code == 529
    assert client.messages.create(**claude_request(PROMPT)).stop_reason == "tool_use"
    retrying, episode2 = _claude(
        emulator, EpisodeRegistration(task_id="fix-median", seed=2, faults=faults), retries=3
    )
    message = retrying.messages.create(
        **claude_request(PROMPT)
    )  # the SDK retries both faults itself
    rows = episode2.rows()
    assert [r.status for r in rows] == [429, 529, 200]
    assert [r.billed for r in rows] == [False, False, True]
    assert ground_truth(rows).output == message.usage.output_tokens


def test_a_cut_stream_bills_what_it_stated(emulator: ProviderEmulator) -> None:
    for style in ("end", "drop"):
        reg = EpisodeRegistration(
            task_id="fix-median",
            seed=2,
            account=f"cut-{style}",
            faults=[Fault(at_request=0, kind="cut-stream", cut_style=style)],
        )
        client, episode = _claude(emulator, reg)
        if style == "end":  # the body ends after message_start: the SDK sees no content
            with client.messages.stream(**claude_request(PROMPT)) as stream:
                assert stream.get_final_message().content == []
        else:  # the connection is reset: the SDK raises
            broken = pytest.raises(Exception, match="incomplete chunked read")
            with broken, client.messages.stream(**claude_request(PROMPT)) as stream:
                stream.get_final_message()
        (row,) = episode.rows()
        assert row.fault == "cut-stream" and not row.delivered
        assert row.quota_after is not None
        if style == "end":  # billed for what message_start stated
            assert row.billed and row.usage is not None and row.usage.output == 1
            assert row.quota_after.five_hour.consumed > 0
        else:  # reset before any event: nothing stated, nothing billed, nothing cached
            assert not row.billed and row.usage is None
            assert row.quota_after.five_hour.consumed == 0
    oclient, oepisode = _openai(
        emulator,
        EpisodeRegistration(task_id="fix-median", faults=[Fault(at_request=0, kind="cut-stream")]),
    )
    incomplete = pytest.raises(RuntimeError, match=r"response\.completed")
    with incomplete, oclient.responses.stream(**_without_stream(codex_request(PROMPT))) as ostream:
        ostream.get_final_response()
    orows = oepisode.rows()
    assert orows[0].fault == "cut-stream" and not orows[0].billed and orows[0].usage is None


def test_unknown_routes_and_tokens_are_refused_and_logged(
    emulator: ProviderEmulator, tmp_path: Path
) -> None:
    with httpx.Client() as http:
        unknown = http.post(emulator.url + "/e/no-such-token/v1/messages", json={})
        missing = http.get(emulator.url + "/v1/models")
    assert unknown.status_code == 404 and unknown.json()["error"]["type"] == "not_found_error"
    assert missing.status_code == 404
    unrouted = emulator.service.ledger_dir / "unrouted.jsonl"
    lines = unrouted.read_text().splitlines()
    assert any("no-such-token" in line for line in lines) and any(
        "/v1/models" in line for line in lines
    )
