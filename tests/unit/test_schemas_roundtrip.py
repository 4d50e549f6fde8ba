"""Wire contracts: episode records and quota observations survive a JSON round trip.

Nulls stay nulls (never 0), the episode record is camelCase on the wire, and
unknown fields are rejected with a reason code.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.episode import (
    EpisodeRecord,
    GraderCheck,
    Transcript,
    iter_episode_lines,
    parse_episode_line,
)
from pairlab.core.schemas.quota import QuotaObservation

ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-:._", min_size=1, max_size=24)
opt_ids = st.none() | ids
counts = st.none() | st.integers(min_value=0, max_value=10**15)
reals = st.none() | st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False)
flags = st.none() | st.booleans()
aware = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
windows = st.sampled_from(["five-hour", "seven-day"]) | st.integers(0, 99999).map(
    lambda m: f"other:{m}"
)

quotas = st.builds(
    QuotaObservation,
    provider=ids,
    window=windows,
    used_percent=st.none() | st.floats(min_value=0, max_value=100, allow_nan=False),
    source_scale=st.sampled_from(["percent", "fraction"]),
    precision_percent=reals,
    resets_at=st.none() | aware,
    reset_id=opt_ids,
    observed_at=aware,
    source=ids,
    account=opt_ids,
)

COUNT_FIELDS = (
    "delivered_tokens",
    "shadow_tokens",
    "uncached_input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_write5m_tokens",
    "cache_write1h_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "tool_calls",
    "api_calls",
    "repetition",
    "order",
)
OPT_TEXT_FIELDS = (
    "session_id",
    "turn_id",
    "tool_call_id",
    "injection_id",
    "client_version",
    "model",
    "model_version",
    "run_id",
    "stratum",
    "prompt_sha256",
    "stdout_sha256",
    "stderr_sha256",
    "price_catalog_version",
    "backend",
    "excluded_reason",
)


@st.composite
def episode_records(draw: st.DrawFn) -> EpisodeRecord:
    values: dict[str, Any] = {
        "episode_id": draw(ids),
        "client": draw(ids),
        "task_id": draw(ids),
        "pair_id": draw(ids),
        "arm": draw(st.sampled_from(["baseline", "optimizer", "retrieval", "full", "candidate"])),
        "finding_ids": draw(st.lists(ids, max_size=3)),
        "shadow_finding_ids": draw(st.lists(ids, max_size=3)),
        "success": draw(flags),
        "correct": draw(flags),
        "timed_out": draw(flags),
        "excluded": draw(st.booleans()),
        "latency_ms": draw(reals),
        "cost_usd": draw(reals),
        "api_list_price_usd": draw(reals),
        "exit_code": draw(st.none() | st.integers(-255, 255)),
        "started_at": draw(st.none() | aware),
        "ended_at": draw(st.none() | aware),
        "join_method": draw(st.sampled_from([None, "exact", "fallback"])),
        "usage_provenance": draw(
            st.none() | st.dictionaries(ids, st.integers(0, 1000), max_size=3)
        ),
        "ledger": draw(st.none() | st.dictionaries(ids, counts, max_size=3)),
        "quota_before": draw(st.none() | st.lists(quotas, max_size=2)),
        "quota_after": draw(st.none() | st.lists(quotas, max_size=2)),
        "grader_checks": draw(
            st.none()
            | st.lists(
                st.builds(GraderCheck, name=ids, kind=ids, passed=flags, detail=opt_ids), max_size=2
            )
        ),
        "transcript": draw(
            st.none()
            | st.builds(
                Transcript,
                prompt=st.none() | st.text(max_size=20),
                stdout=st.none(),
                stderr=st.none(),
            )
        ),
    }
    for name in COUNT_FIELDS:
        values[name] = draw(counts)
    for name in OPT_TEXT_FIELDS:
        values[name] = draw(opt_ids)
    return EpisodeRecord(**values)


@given(episode_records())
def test_episode_record_json_round_trip_keeps_nulls(record: EpisodeRecord) -> None:
    line = record.to_json_line()
    back = parse_episode_line(line, 1)
    assert back == record
    wire = json.loads(line)
    # every field is on the wire, and a None is a JSON null, never 0 or absent
    assert len(wire) == len(EpisodeRecord.model_fields)
    for name, field in EpisodeRecord.model_fields.items():
        key = field.alias or name
        if getattr(record, name) is None:
            assert wire[key] is None, key
    # camelCase on the wire (nested quota observations keep their own snake_case contract)
    assert all(re.fullmatch(r"[a-z][A-Za-z0-9]*", key) for key in wire)
    assert wire["schemaVersion"] == 2


def test_camel_case_keys_of_the_seed() -> None:
    record = EpisodeRecord(episode_id="e", client="c", task_id="t", pair_id="p", arm="baseline")
    wire = json.loads(record.to_json_line())
    for key in (
        "episodeId",
        "sessionId",
        "toolCallId",
        "clientVersion",
        "modelVersion",
        "taskId",
        "pairId",
        "findingIds",
        "shadowFindingIds",
        "deliveredTokens",
        "latencyMs",
        "costUsd",
        "uncachedInputTokens",
        "cachedInputTokens",
        "outputTokens",
        "totalTokens",
        "cacheWrite5mTokens",
        "cacheWrite1hTokens",
    ):
        assert key in wire
    assert (wire["episodeId"], wire["taskId"], wire["pairId"]) == ("e", "t", "p")
    assert wire["deliveredTokens"] is None and wire["findingIds"] == []


def test_seed_only_record_is_accepted_and_missing_usage_stays_null() -> None:
    line = json.dumps(
        {
            "episodeId": "e1",
            "client": "codex",
            "taskId": "t",
            "pairId": "r:t:0",
            "arm": "full",
            "totalTokens": None,
        }
    )
    record = parse_episode_line(line, 1)
    assert record.total_tokens is None
    assert record.usage_vector().total is None
    assert json.loads(record.to_json_line())["outputTokens"] is None


@settings(max_examples=25)  # the rejection does not depend on the rest of the record
@given(episode_records(), st.sampled_from(["unknownField", "tokens", "episode"]))
def test_unknown_fields_are_rejected(record: EpisodeRecord, extra: str) -> None:
    wire = json.loads(record.to_json_line())
    wire[extra] = 1
    with pytest.raises(InvalidInputError) as info:
        parse_episode_line(json.dumps(wire), 7, "log.jsonl")
    assert info.value.reason == ReasonCode.MALFORMED_INPUT
    assert "log.jsonl:7" in info.value.message and extra in info.value.message


def test_unknown_nested_quota_field_is_rejected() -> None:
    record = EpisodeRecord(
        episode_id="e",
        client="c",
        task_id="t",
        pair_id="p",
        arm="baseline",
        quota_before=[
            QuotaObservation(
                provider="sim",
                window="five-hour",
                observed_at=datetime(2026, 1, 1, tzinfo=UTC),
                source="sim",
            )
        ],
    )
    wire = json.loads(record.to_json_line())
    wire["quotaBefore"][0]["usedPct"] = 3
    with pytest.raises(InvalidInputError, match="usedPct"):
        parse_episode_line(json.dumps(wire), 1)


def test_bad_lines_name_their_line_and_are_never_skipped() -> None:
    good = EpisodeRecord(
        episode_id="e", client="c", task_id="t", pair_id="p", arm="baseline"
    ).to_json_line()
    lines = iter([good, "", "{not json", good])
    with pytest.raises(InvalidInputError) as info:
        list(iter_episode_lines(lines, "x.jsonl"))
    assert "x.jsonl:3" in info.value.message
    with pytest.raises(InvalidInputError) as info:
        parse_episode_line(json.dumps({**json.loads(good), "schemaVersion": 1}), 1)
    assert info.value.reason == ReasonCode.UNSUPPORTED_SCHEMA_VERSION
    with pytest.raises(InvalidInputError) as info:
        parse_episode_line(json.dumps({**json.loads(good), "deliveredTokens": -1}), 1)
    assert info.value.reason == ReasonCode.MALFORMED_INPUT


@given(quotas)
def test_quota_observation_round_trip(observation: QuotaObservation) -> None:
    text = observation.model_dump_json()
    back = QuotaObservation.model_validate_json(text)
    assert back == observation
    wire = json.loads(text)
    if observation.used_percent is None:
        assert wire["used_percent"] is None
    if observation.resets_at is None:
        assert wire["resets_at"] is None


@pytest.mark.parametrize(
    "change",
    [
        {"window": "five-hours"},
        {"window": "other:"},
        {"used_percent": 100.5},
        {"used_percent": -1},
        {"observed_at": "2026-01-01T00:00:00"},  # naive: not an absolute instant
        {"resets_at": "2026-01-01T05:00:00"},
        {"bogus": 1},
    ],
)
def test_quota_observation_rejects_invalid(change: dict[str, object]) -> None:
    base = {
        "provider": "sim",
        "window": "five-hour",
        "used_percent": 10.0,
        "observed_at": "2026-01-01T00:00:00Z",
        "resets_at": "2026-01-01T05:00:00Z",
        "source": "sim",
    }
    QuotaObservation.model_validate_json(json.dumps(base))
    with pytest.raises(ValidationError):
        QuotaObservation.model_validate_json(json.dumps({**base, **change}))
