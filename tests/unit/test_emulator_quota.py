"""The emulated quota (core.emulator.quota_model) and where it is surfaced, at what precision."""

from __future__ import annotations

from datetime import UTC, datetime

from pairlab.adapters.quota.claude_formats import header_observations
from pairlab.core.emulator.quota_model import (
    FIVE_HOUR_S,
    SEVEN_DAY_S,
    AccountPlan,
    AccountQuota,
    QuotaWeights,
)
from pairlab.core.emulator.quota_surfaces import (
    anthropic_unified_headers,
    claude_oauth_usage,
    codex_headers,
    codex_usage,
    whole_percent,
)
from pairlab.core.schemas.usage import UsageVector

T0 = 1_800_000_000.25


def test_windows_open_at_the_first_request_and_reset_their_length_later() -> None:
    quota = AccountQuota(AccountPlan(five_hour_limit=1000, seven_day_limit=10_000))
    idle = quota.snapshot(T0)
    assert idle.five_hour.resets_at is None and idle.five_hour.utilization == 0
    opened = quota.open(T0)
    assert opened.five_hour.resets_at == int(T0) + FIVE_HOUR_S
    assert opened.seven_day.resets_at == int(T0) + SEVEN_DAY_S
    quota.charge("anthropic", UsageVector(uncached_input=100), T0 + 1)
    assert quota.snapshot(T0 + 2).five_hour.utilization == 0.1
    after_reset = quota.open(T0 + FIVE_HOUR_S + 5)
    assert (
        after_reset.five_hour.consumed == 0
        and after_reset.five_hour.resets_at == int(T0) + 2 * FIVE_HOUR_S + 5
    )
    assert after_reset.seven_day.consumed == 100  # the week goes on


def test_consumption_is_weighted_by_dimension() -> None:
    weights = QuotaWeights()
    usage = UsageVector(
        uncached_input=1000, cache_read=1000, cache_write_5m=1000, cache_write_1h=1000, output=1000
    )
    assert weights.weigh(usage) == 1000 * (1 + 0.1 + 1.25 + 2 + 5)
    assert AccountPlan().weights_for("openai").weigh(UsageVector(cache_read=1000, output=10)) == 180
    # null dimensions weigh nothing (no usage observed there)
    assert weights.weigh(UsageVector(output=None)) == 0


def test_a_full_window_refuses_and_caps_at_one_hundred_percent() -> None:
    quota = AccountQuota(AccountPlan(five_hour_limit=100, seven_day_limit=10_000))
    quota.charge("anthropic", UsageVector(output=50), T0)  # 250 weighted
    full = quota.exhausted(T0)
    assert full is not None and full.window == "five_hour" and full.utilization == 1.0
    assert quota.exhausted(T0 + FIVE_HOUR_S + 1) is None


def test_surfaces_floor_to_whole_percent_in_each_sources_own_format() -> None:
    quota = AccountQuota(AccountPlan(five_hour_limit=1000, seven_day_limit=100_000))
    snap = quota.charge("anthropic", UsageVector(uncached_input=429), T0)  # 42.9 %
    assert whole_percent(snap.five_hour) == 42 and whole_percent(snap.seven_day) == 0
    headers = anthropic_unified_headers(snap)
    assert headers["anthropic-ratelimit-unified-5h-utilization"] == "0.42"
    assert headers["anthropic-ratelimit-unified-5h-reset"] == str(int(T0) + FIVE_HOUR_S)
    assert headers["anthropic-ratelimit-unified-representative-claim"] == "five_hour"
    assert headers["anthropic-ratelimit-unified-status"] == "allowed"
    oauth = claude_oauth_usage(snap)
    assert oauth["five_hour"]["utilization"] == 42.0
    assert datetime.fromisoformat(oauth["five_hour"]["resets_at"]) == datetime.fromtimestamp(
        int(T0) + FIVE_HOUR_S, tz=UTC
    )
    codex = codex_headers(snap)
    assert codex["x-codex-primary-used-percent"] == "42"
    assert codex["x-codex-primary-window-minutes"] == "300"
    assert codex["x-codex-secondary-window-minutes"] == "10080"
    body = codex_usage(snap)["rate_limit"]
    assert body["primary_window"] == {
        "used_percent": 42,
        "limit_window_seconds": 18000,
        "reset_at": int(T0) + FIVE_HOUR_S,
    }


def test_the_unified_headers_read_back_at_whole_percent_precision() -> None:
    """The existing header reader states exactly the precision the headers carry."""
    quota = AccountQuota(AccountPlan(five_hour_limit=1000, seven_day_limit=3000))
    snap = quota.charge("anthropic", UsageVector(uncached_input=999), T0)
    observed = {
        o.window: o for o in header_observations(anthropic_unified_headers(snap), datetime.now(UTC))
    }
    assert observed["five-hour"].used_percent == 99.0  # floored: never shows 100 before it is
    assert observed["seven-day"].used_percent == 33.0
    assert {o.precision_percent for o in observed.values()} == {1.0}


def test_an_unstarted_window_states_no_reset() -> None:
    snap = AccountQuota().snapshot(T0)
    assert "anthropic-ratelimit-unified-5h-reset" not in anthropic_unified_headers(snap)
    assert "x-codex-primary-reset-at" not in codex_headers(snap)
    assert claude_oauth_usage(snap)["five_hour"]["resets_at"] is None


def test_quota_weights_cover_exactly_the_billed_dimensions() -> None:
    # QuotaWeights.weigh reads BILLED_DIMENSIONS: a weight per billed dimension, no other
    from pairlab.core.emulator.quota_model import QuotaWeights
    from pairlab.core.schemas.usage import BILLED_DIMENSIONS

    assert tuple(QuotaWeights.model_fields) == BILLED_DIMENSIONS
