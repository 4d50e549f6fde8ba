"""Per-interval quota consumption (issue 16): value only when usable, else null + reason."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from pairlab.core.quota.consumption import (
    QUOTA_METRICS,
    NullReason,
    account_window_columns,
    interval_consumption,
    record_columns,
    record_consumption,
    window_consumption,
)
from pairlab.core.schemas.episode import EpisodeRecord, parse_episode_line
from pairlab.core.schemas.quota import QuotaConsumption, QuotaObservation
from pairlab.core.verdict.reasons import VerdictReason

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RESET = T0 + timedelta(hours=3)


def obs(
    used: float | None,
    *,
    minutes: float = 0,
    resets_at: datetime | None = RESET,
    reset_id: str | None = "r1",
    precision: float | None = 1.0,
    window: str = "five-hour",
    provider: str = "sim",
) -> QuotaObservation:
    return QuotaObservation(
        provider=provider,
        window=window,
        used_percent=used,
        precision_percent=precision,
        resets_at=resets_at,
        reset_id=reset_id,
        observed_at=T0 + timedelta(minutes=minutes),
        source="test",
    )


def test_usable_interval_gives_after_minus_before_exactly() -> None:
    got = window_consumption(obs(12.1, precision=0.1), obs(12.3, minutes=5, precision=0.1), False)
    assert got.consumption_percent == 0.2  # decimal arithmetic: not 0.20000000000000107
    assert got.reason is None
    assert got.precision_percent == 0.1
    assert got.reset_id == "r1"
    assert (got.started_at, got.ended_at) == (T0, T0 + timedelta(minutes=5))


def test_zero_consumption_is_a_measured_zero_not_a_null() -> None:
    got = window_consumption(obs(7), obs(7, minutes=1), False)
    assert got.consumption_percent == 0.0 and got.reason is None


@pytest.mark.parametrize(
    ("start", "end", "concurrent", "reason"),
    [
        (obs(None), obs(5, minutes=1), False, NullReason.MISSING_QUOTA_TELEMETRY),
        (obs(5), obs(None, minutes=1), False, NullReason.MISSING_QUOTA_TELEMETRY),
        (obs(5, minutes=2), obs(6), False, NullReason.QUOTA_INTERVAL_MISMATCH),
        # another reset identity or time at the end: a reset passed in between
        (obs(80), obs(3, minutes=1, reset_id="r2"), False, NullReason.QUOTA_RESET_CROSSING),
        (
            obs(80),
            obs(3, minutes=1, resets_at=RESET + timedelta(hours=5)),
            False,
            NullReason.QUOTA_RESET_CROSSING,
        ),
        # the interval ends at/after the reset both ends announce
        (obs(5), obs(6, minutes=180), False, NullReason.QUOTA_RESET_CROSSING),
        # an unknown reset identity or time cannot exclude a crossing
        (obs(5, reset_id=None), obs(6, minutes=1, reset_id=None), False, "crossing"),
        (obs(5, resets_at=None), obs(6, minutes=1, resets_at=None), False, "crossing"),
        (obs(9), obs(8, minutes=1), False, NullReason.SAME_RESET_UTILIZATION_DECREASE),
        (obs(99), obs(100, minutes=1), False, NullReason.QUOTA_WINDOW_SATURATED),
        (obs(100), obs(100, minutes=1), False, NullReason.QUOTA_WINDOW_SATURATED),
        (obs(5), obs(6, minutes=1), None, NullReason.UNRELATED_CONCURRENT_QUOTA_USE),
        (obs(5), obs(6, minutes=1), True, NullReason.UNRELATED_CONCURRENT_QUOTA_USE),
        (obs(5, precision=None), obs(6, minutes=1), False, NullReason.UNKNOWN_QUOTA_PRECISION),
        (obs(5), obs(6, minutes=1, precision=None), False, NullReason.UNKNOWN_QUOTA_PRECISION),
    ],
)
def test_unusable_interval_is_null_with_the_first_failing_reason(
    start: QuotaObservation,
    end: QuotaObservation,
    concurrent: bool | None,
    reason: NullReason | str,
) -> None:
    got = window_consumption(start, end, concurrent)
    expected = NullReason.QUOTA_RESET_CROSSING if reason == "crossing" else reason
    assert got.consumption_percent is None
    assert got.reason == str(expected)


def test_reasons_reuse_the_canary_vocabulary_where_meaning_is_the_same() -> None:
    canary = {str(r) for r in VerdictReason}
    shared = {r for r in NullReason} - {
        NullReason.AMBIGUOUS_QUOTA_WINDOW,
        NullReason.QUOTA_WINDOW_SATURATED,
    }
    assert {str(r) for r in shared} <= canary
    assert all(str(r) == str(r).lower() and " " not in str(r) for r in NullReason)


def test_windows_missing_or_repeated_at_one_end() -> None:
    before = [obs(5), obs(1, window="seven-day", reset_id="w1")]
    after = [
        obs(6, minutes=1),
        obs(2, minutes=1, window="other:60", reset_id="x"),
        obs(2, minutes=1, provider="claude:opus", window="seven-day"),
        obs(3, minutes=1, provider="claude:opus", window="seven-day"),
    ]
    got = {(c.provider, c.window): c for c in interval_consumption(before, after, False)}
    assert got[("sim", "five-hour")].consumption_percent == 1.0
    assert got[("sim", "seven-day")].reason == "missing-quota-window"
    assert got[("sim", "other:60")].reason == "missing-quota-window"
    assert got[("claude:opus", "seven-day")].reason == "ambiguous-quota-window"
    assert interval_consumption(None, None, False) == []
    assert interval_consumption([], after[:1], False)[0].reason == "missing-quota-window"


def test_consumption_model_refuses_a_value_with_a_reason_and_a_null_without_one() -> None:
    with pytest.raises(ValidationError):
        QuotaConsumption(provider="sim", window="five-hour", consumption_percent=1.0, reason="x")
    with pytest.raises(ValidationError):
        QuotaConsumption(provider="sim", window="five-hour")


def _record(**fields: object) -> EpisodeRecord:
    base: dict[str, object] = {
        "episodeId": "r:t:0:baseline",
        "client": "sim",
        "taskId": "t",
        "pairId": "r:t:0",
        "arm": "baseline",
    }
    return EpisodeRecord.model_validate_json(json.dumps({**base, **fields}))


def test_old_records_without_the_field_still_load_and_derive_a_null() -> None:
    before = [obs(5).model_dump(mode="json")]
    after = [obs(6, minutes=1).model_dump(mode="json")]
    line = json.dumps(
        {
            "schemaVersion": 2,
            "episodeId": "r:t:0:baseline",
            "client": "sim",
            "taskId": "t",
            "pairId": "r:t:0",
            "arm": "baseline",
            "quotaBefore": before,
            "quotaAfter": after,
        }
    )
    record = parse_episode_line(line, 1)
    assert record.quota_consumption is None
    assert record.unrelated_concurrent_quota_use is None
    # concurrent use was never assessed for it: not excluded, so no value
    (derived,) = record_consumption(record)
    assert derived.reason == "unrelated-concurrent-quota-use"
    assert record_columns(record)["quotaFiveHourConsumptionPct"] is None


def test_new_field_round_trips_on_the_wire() -> None:
    consumption = interval_consumption([obs(5)], [obs(7, minutes=2)], False)
    record = _record(
        quotaConsumption=[c.model_dump(mode="json", by_alias=True) for c in consumption],
        unrelatedConcurrentQuotaUse=False,
        concurrentUseBasis="operator-assertion",
        quotaIntervalId="r:t:q0:baseline",
    )
    wire = json.loads(record.to_json_line())
    assert wire["quotaConsumption"][0]["consumptionPercent"] == 2.0
    assert wire["quotaConsumption"][0]["precisionPercent"] == 1.0
    assert wire["concurrentUseBasis"] == "operator-assertion"
    again = parse_episode_line(record.to_json_line(), 1)
    assert again == record
    with pytest.raises(ValidationError):
        _record(concurrentUseBasis="a-guess")


def test_flat_columns_take_the_account_wide_windows_only() -> None:
    consumption = interval_consumption(
        [obs(5), obs(1, window="seven-day", reset_id="w"), obs(3, provider="claude:opus")],
        [
            obs(6, minutes=1),
            obs(1, minutes=1, window="seven-day", reset_id="w2"),
            obs(9, minutes=1, provider="claude:opus"),
        ],
        False,
    )
    cols = account_window_columns(consumption, observed=True)
    assert cols == {
        "quotaFiveHourConsumptionPct": 1.0,
        "quotaFiveHourNullReason": None,
        "quotaFiveHourPrecisionPct": 1.0,
        "quotaSevenDayConsumptionPct": None,
        "quotaSevenDayNullReason": "quota-reset-crossing",
        "quotaSevenDayPrecisionPct": 1.0,
    }
    assert set(QUOTA_METRICS) <= set(cols)
    none = account_window_columns([], observed=False)
    assert none["quotaFiveHourNullReason"] == "missing-quota-telemetry"
    assert account_window_columns([], observed=True)["quotaSevenDayNullReason"] == (
        "missing-quota-window"
    )


@given(
    used=st.lists(st.integers(min_value=0, max_value=99), min_size=2, max_size=2),
    precision=st.sampled_from([None, 1.0, 0.1]),
    concurrent=st.sampled_from([None, True, False]),
    same_reset=st.booleans(),
)
def test_never_a_zero_for_an_unusable_interval(
    used: list[int], precision: float | None, concurrent: bool | None, same_reset: bool
) -> None:
    start = obs(used[0], precision=precision)
    end = obs(used[1], minutes=1, precision=precision, reset_id="r1" if same_reset else "r2")
    got = window_consumption(start, end, concurrent)
    usable = precision is not None and concurrent is False and same_reset and used[1] >= used[0]
    assert (got.consumption_percent is not None) == usable
    if usable:
        assert got.consumption_percent == used[1] - used[0]
    else:
        assert got.reason is not None


def _eval_record(
    arm: str, start: float | None, end: float | None, concurrent: bool | None
) -> EpisodeRecord:
    from pairlab.core.quota.consumption import ConcurrentUse
    from pairlab.core.records import (
        EpisodeIdentity,
        EpisodeOutcome,
        Grading,
        QuotaInterval,
        RecordedUsage,
        build_episode_record,
    )

    return build_episode_record(
        EpisodeIdentity(
            run_id="r",
            episode_id=f"r:t:0:{arm}",
            pair_id="r:t:0",
            task_id="t",
            arm=arm,
            repetition=0,
            order=0,
        ),
        EpisodeOutcome(
            backend="local",
            started_at=T0,
            ended_at=T0,
            exit_code=0,
            timed_out=False,
            latency_ms=1.0,
            prompt="p",
            stdout="",
            stderr="",
        ),
        RecordedUsage(
            client="sim",
            client_version="1",
            model="m",
            session_id=None,
            vector=None,
            api_calls=None,
            provenance=None,
        ),
        QuotaInterval(
            before=[obs(start)],
            after=[obs(end, minutes=1)],
            concurrent_use=ConcurrentUse(concurrent, "simulator-charge-log"),
        ),
        Grading(checks=[]),
    )


def test_frame_and_parquet_columns_keep_null_beside_a_measured_zero(tmp_path: object) -> None:
    from pairlab.adapters.run.outputs import episodes_table
    from pairlab.core.analysis.cohorts import episodes_frame

    records = [
        _eval_record("baseline", 5, 5, False),  # a measured 0
        _eval_record("optimizer", 5, 7, True),  # someone else used the account
        _eval_record("retrieval", None, 7, False),  # the probe could not read
    ]
    assert records[1].concurrent_use_basis == "simulator-charge-log"
    for frame in (episodes_frame(records), episodes_table(records)):
        assert frame["quotaFiveHourConsumptionPct"].to_list() == [0.0, None, None]
        assert frame["quotaFiveHourNullReason"].to_list() == [
            None,
            "unrelated-concurrent-quota-use",
            "missing-quota-telemetry",
        ]
        assert frame["quotaSevenDayNullReason"].to_list() == ["missing-quota-window"] * 3
    table = episodes_table(records)
    assert json.loads(table["quotaConsumption"][0])[0]["consumptionPercent"] == 0.0
    assert table["unrelatedConcurrentQuotaUse"].to_list() == [False, True, False]


def test_the_frame_derives_quota_columns_per_record_only_where_quota_data_is() -> None:
    """Issue 28: records without quota data share one value in the frame; records with it
    (snapshots or stored consumption) get their own; both as :func:`record_columns` says,
    and every other column is the record's own attribute (ints as floats)."""
    from pairlab.core.analysis.pairing import FRAME_SCHEMA, episodes_frame
    from pairlab.core.quota.consumption import record_columns

    measured = _eval_record("baseline", 5, 9, False)
    unreadable = _eval_record("optimizer", None, 7, False)
    stored = measured.model_copy(update={"arm": "full", "quota_before": None, "quota_after": None})
    bare = measured.model_copy(
        update={
            "arm": "retrieval",
            "quota_before": None,
            "quota_after": None,
            "quota_consumption": None,
            "total_tokens": 12,
            "correct": None,
        }
    )
    records = [bare, measured, bare, unreadable, stored]
    frame = episodes_frame(iter(records))  # a generator is enough: it streams
    assert list(frame.schema.items()) == list(FRAME_SCHEMA.items())
    for row, record in zip(frame.iter_rows(named=True), records, strict=True):
        for name, value in record_columns(record).items():
            assert row[name] == value, name
        assert (row["arm"], row["correct"], row["pairId"]) == (
            record.arm,
            record.correct,
            record.pair_id,
        )
        total = record.total_tokens
        assert row["totalTokens"] == (None if total is None else float(total))
    assert frame["quotaFiveHourConsumptionPct"].to_list() == [None, 4.0, None, None, 4.0]
    assert frame["quotaFiveHourNullReason"][0] == "missing-quota-telemetry"
    assert episodes_frame([]).height == 0
