"""The price catalog: validation on load, exact lookup, per-request tiers, Not priced outcomes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.prices import (
    CATALOG_VERSION,
    NotPriced,
    PricedUsage,
    default_prices_dir,
    load_catalog,
    price_usage,
)
from pairlab.core.schemas.usage import UsageVector
from tests.support import cli_exit

AT = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
CATALOG = load_catalog()


def priced(result: PricedUsage | NotPriced) -> PricedUsage:
    assert isinstance(result, PricedUsage), result
    return result


def not_priced(result: PricedUsage | NotPriced, code: str) -> NotPriced:
    assert isinstance(result, NotPriced), result
    assert result.code == code, result.reason
    return result


def test_bundled_catalog_is_the_declared_version() -> None:
    assert CATALOG.version == CATALOG_VERSION
    assert (default_prices_dir() / f"{CATALOG_VERSION}.yaml").is_file()
    for row in CATALOG.rows:
        assert row.source_url.startswith("https://")
        assert row.verified_on.isoformat() == "2026-11-29"
    # Unconfirmed (grade T / C-only) rows are left out.
    assert not [r for r in CATALOG.rows if r.provider == "google" or r.model.startswith("gpt-6-")]


def test_one_hour_writes_use_the_one_hour_rate() -> None:
    usage = UsageVector(cache_write_5m=1_000_000, cache_write_1h=1_000_000)
    result = priced(price_usage(CATALOG, "anthropic", "claude-opus-5", AT, usage))
    by_dim = {t.dimension: t for t in result.terms}
    assert by_dim["cache_write_5m"].rate_per_mtok == 6.25
    assert by_dim["cache_write_1h"].rate_per_mtok == 10.0
    assert result.api_list_price_usd == pytest.approx(16.25)


def test_tier_boundary_exactly_at_the_threshold_is_standard() -> None:
    at = datetime(2026, 9, 1, tzinfo=UTC)
    # Prompt = uncached + cache read + writes: 100,000 + 170,000 + 2,000 = 272,000 exactly.
    at_threshold = UsageVector(
        uncached_input=100_000, cache_read=170_000, cache_write_generic=2_000, output=1_000
    )
    standard = priced(price_usage(CATALOG, "openai", "gpt-5.6-sol", at, at_threshold))
    assert standard.tier == "standard"
    assert {t.dimension: t.rate_per_mtok for t in standard.terms} == {
        "uncached_input": 4.0,
        "cache_read": 0.4,
        "cache_write_generic": 5.0,
        "output": 20.0,
    }
    one_more = at_threshold.model_copy(update={"cache_read": 170_001})
    long = priced(price_usage(CATALOG, "openai", "gpt-5.6-sol", at, one_more))
    assert long.tier == "long-context"
    # The whole request moves to the tier, every bucket (not only the tokens above it).
    assert {t.dimension: t.rate_per_mtok for t in long.terms} == {
        "uncached_input": 8.0,
        "cache_read": 0.8,
        "cache_write_generic": 10.0,
        "output": 30.0,
    }
    expected = (100_000 * 8 + 170_001 * 0.8 + 2_000 * 10 + 1_000 * 30) / 1e6
    assert long.api_list_price_usd == pytest.approx(expected)


def test_output_tokens_do_not_decide_the_tier() -> None:
    usage = UsageVector(uncached_input=1_000, output=500_000)
    assert priced(price_usage(CATALOG, "openai", "gpt-5.6-luna", AT, usage)).tier == "standard"


def test_tier_undecidable_without_prompt_tokens() -> None:
    not_priced(
        price_usage(CATALOG, "openai", "gpt-5.6-luna", AT, UsageVector(output=10)),
        "tier-undecidable",
    )


def test_price_change_at_the_effective_date(tmp_path: Path) -> None:
    data = yaml.safe_load((default_prices_dir() / f"{CATALOG_VERSION}.yaml").read_text())
    base = next(r for r in data["rows"] if r["model"] == "claude-haiku-4-5")
    change = datetime(2026, 12, 1, tzinfo=UTC)
    data["rows"] = [
        {**base, "effective_to": change},
        {**base, "effective_from": change, "uncached_input": 1.5},
    ]
    path = tmp_path / "2026-12-01.yaml"
    path.write_text(yaml.safe_dump({**data, "version": "test", "aliases": {}}))
    catalog = load_catalog(tmp_path)
    usage = UsageVector(uncached_input=1_000_000)
    before = priced(
        price_usage(catalog, "anthropic", "claude-haiku-4-5", change - timedelta(seconds=1), usage)
    )
    at_change = priced(price_usage(catalog, "anthropic", "claude-haiku-4-5", change, usage))
    assert before.api_list_price_usd == pytest.approx(1.0)
    assert at_change.api_list_price_usd == pytest.approx(1.5)
    assert at_change.catalog_version == "test"


def test_bundled_sonnet_5_5_read_rate_ends_at_the_unconfirmed_cut() -> None:
    usage = UsageVector(uncached_input=1000, cache_read=1000)
    day_before = datetime(2026, 10, 6, 23, 59, 59, tzinfo=UTC)
    assert (
        priced(price_usage(CATALOG, "anthropic", "claude-sonnet-5-5", day_before, usage))
        .terms[1]
        .rate_per_mtok
        == 0.2
    )
    cut = datetime(2026, 10, 7, tzinfo=UTC)
    not_priced(
        price_usage(CATALOG, "anthropic", "claude-sonnet-5-5", cut, usage), "dimension-without-rate"
    )
    # Without cache reads the request is still priced after the cut.
    priced(
        price_usage(
            CATALOG, "anthropic", "claude-sonnet-5-5", cut, UsageVector(uncached_input=1000)
        )
    )


def test_ambiguous_ids_are_not_priced_but_documented_aliases_are() -> None:
    usage = UsageVector(uncached_input=1000)
    for alias in ("claude-sonnet", "claude-opus", "claude-haiku"):
        result = not_priced(price_usage(CATALOG, "anthropic", alias, AT, usage), "ambiguous-model")
        assert "ambiguous" in result.reason
    not_priced(price_usage(CATALOG, "openai", "gpt-5.6", AT, usage), "ambiguous-model")
    resolved = priced(price_usage(CATALOG, "anthropic", "claude-sonnet-4-5", AT, usage))
    assert resolved.row.model == "claude-sonnet-4-5-20250929"


def test_unknown_route_provider_model_and_time() -> None:
    usage = UsageVector(uncached_input=1000)
    not_priced(
        price_usage(CATALOG, "anthropic", "claude-opus-5", AT, usage, route="bedrock"),
        "unknown-route",
    )
    not_priced(price_usage(CATALOG, "google", "gemini-3.5-flash", AT, usage), "unknown-provider")
    not_priced(price_usage(CATALOG, "mistral", "large", AT, usage), "unknown-provider")
    # The nearest model is never guessed.
    not_priced(price_usage(CATALOG, "anthropic", "claude-opus-5-0", AT, usage), "unknown-model")
    # Copilot's Sol rate is confirmed only for its file's period.
    not_priced(
        price_usage(CATALOG, "github-copilot", "gpt-5.6-sol", AT, usage), "no-rate-at-timestamp"
    )
    in_period = datetime(2026, 8, 1, tzinfo=UTC)
    assert (
        priced(price_usage(CATALOG, "github-copilot", "gpt-5.6-sol", in_period, usage)).row.route
        == "copilot"
    )


def test_captured_dimension_without_a_rate() -> None:
    result = price_usage(
        CATALOG, "openai", "gpt-5.6-sol", AT, UsageVector(uncached_input=100, cache_write_5m=10)
    )
    assert "cache_write_5m" in not_priced(result, "dimension-without-rate").reason
    # Zero tokens in a dimension without a rate is no obstacle.
    zero = priced(
        price_usage(
            CATALOG, "openai", "gpt-5.6-sol", AT, UsageVector(uncached_input=100, cache_write_5m=0)
        )
    )
    assert zero.api_list_price_usd == pytest.approx(100 * 4 / 1e6)
    # Terra's output rate is unconfirmed (null): output tokens make it Not priced.
    not_priced(
        price_usage(
            CATALOG, "openai", "gpt-5.6-terra", AT, UsageVector(uncached_input=1, output=1)
        ),
        "dimension-without-rate",
    )


def test_null_dimensions_are_not_zero_terms() -> None:
    result = priced(
        price_usage(CATALOG, "anthropic", "claude-haiku-4-5", AT, UsageVector(output=1000))
    )
    assert [t.dimension for t in result.terms] == ["output"]
    not_priced(
        price_usage(CATALOG, "anthropic", "claude-haiku-4-5", AT, UsageVector()), "empty-usage"
    )


def test_unconfirmed_long_context_tier_is_not_priced() -> None:
    at = datetime(2026, 11, 1, tzinfo=UTC)
    small = UsageVector(uncached_input=100_000, output=10)
    assert (
        priced(price_usage(CATALOG, "anthropic", "claude-haiku-5-5", at, small)).tier == "standard"
    )
    big = UsageVector(uncached_input=100_001, output=10)
    not_priced(
        price_usage(CATALOG, "anthropic", "claude-haiku-5-5", at, big), "dimension-without-rate"
    )


def test_reported_charge_is_kept_apart() -> None:
    usage = UsageVector(uncached_input=1_000_000)
    result = priced(
        price_usage(
            CATALOG, "anthropic", "claude-haiku-4-5", AT, usage, provider_reported_charge_usd=0.42
        )
    )
    assert result.api_list_price_usd == pytest.approx(1.0)
    assert result.provider_reported_charge_usd == 0.42


def _catalog_file(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"version": "x", "verified_on": AT.date(), "rows": rows}))
    return path


def _row(**changes: object) -> dict[str, object]:
    row: dict[str, object] = {
        "provider": "anthropic",
        "route": "api",
        "model": "m",
        "effective_from": None,
        "effective_to": None,
        "long_context": None,
        "uncached_input": 1.0,
        "cache_read": 0.1,
        "cache_write_5m": None,
        "cache_write_1h": None,
        "cache_write_generic": None,
        "output": 5.0,
        "source_url": "https://example.invalid/pricing",
        "verified_on": AT.date(),
    }
    row.update(changes)
    return row


@pytest.mark.parametrize(
    "rows",
    [
        [_row(effective_to=AT), _row(effective_from=AT.replace(month=9))],  # overlapping windows
        [_row(), _row()],  # two open windows for one key
        [_row(uncached_input="1.0")],  # strict: a string is not a rate
        [_row(output=-1.0)],
        [
            _row(long_context={"threshold_tokens": 10, "multipliers": {"uncached_input": 2}})
        ],  # output uncovered
        [_row(long_context={"threshold_tokens": 10})],  # neither multipliers nor rates
        [_row(effective_from=AT, effective_to=AT)],  # empty window
        [_row(source_url="http://insecure")],
        [_row(surprise=1)],
    ],
)
def test_invalid_catalogs_are_refused(tmp_path: Path, rows: list[dict[str, object]]) -> None:
    with pytest.raises(InvalidInputError) as err:
        load_catalog(_catalog_file(tmp_path, rows))
    assert err.value.reason == ReasonCode.INVALID_PRICE_CATALOG


def test_adjacent_windows_are_valid(tmp_path: Path) -> None:
    catalog = load_catalog(
        _catalog_file(tmp_path, [_row(effective_to=AT), _row(effective_from=AT, output=6.0)])
    )
    assert len(catalog.rows) == 2


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    return cli_exit(list(args)), capsys.readouterr().out


def test_price_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    usage = json.dumps(
        {"uncached_input": 2000, "cache_read": 10000, "cache_write_1h": 500, "output": 800}
    )
    args = [
        "price",
        "--provider",
        "anthropic",
        "--model",
        "claude-sonnet-5",
        "--at",
        "2026-10-01T00:00:00Z",
    ]
    code, out = run_cli(capsys, *args, "--usage", usage, "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["priced"] is True
    assert payload["catalog_version"] == CATALOG_VERSION
    assert payload["tier"] == "standard" and payload["reason"] is None
    assert [t["dimension"] for t in payload["terms"]] == [
        "uncached_input",
        "cache_read",
        "cache_write_1h",
        "output",
    ]
    assert payload["api_list_price_usd"] == pytest.approx(
        (2000 * 2 + 10000 * 0.2 + 500 * 4 + 800 * 10) / 1e6
    )
    code, text = run_cli(capsys, *args, "--usage", usage)
    assert code == 0 and "cache_write_1h: 500 tokens x $4.0/MTok" in text


def test_price_cli_not_priced_and_invalid(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["price", "--provider", "anthropic", "--at", "2026-10-01", "--json"]
    code, out = run_cli(
        capsys, *base, "--model", "claude-sonnet", "--usage", '{"uncached_input": 1}'
    )
    assert code == 2
    payload = json.loads(out)
    assert payload["priced"] is False and payload["api_list_price_usd"] is None
    assert "ambiguous" in payload["reason"]
    code, out = run_cli(capsys, *base, "--model", "claude-opus-5", "--usage", '{"uncached": 1}')
    assert code == 2
    assert json.loads(out.splitlines()[-1])["reason_code"] == "malformed-input"


def test_summed_usage_prices_only_when_the_tier_is_certain() -> None:
    at = datetime(2026, 9, 1, tzinfo=UTC)
    small_total = UsageVector(uncached_input=200_000, output=10)
    assert (
        priced(price_usage(CATALOG, "openai", "gpt-5.6-sol", at, small_total, requests=5)).tier
        == "standard"
    )
    big_total = UsageVector(uncached_input=300_000, output=10)
    not_priced(
        price_usage(CATALOG, "openai", "gpt-5.6-sol", at, big_total, requests=5), "tier-undecidable"
    )
    not_priced(
        price_usage(CATALOG, "openai", "gpt-5.6-sol", at, big_total, requests=None),
        "tier-undecidable",
    )
    assert (
        priced(price_usage(CATALOG, "openai", "gpt-5.6-sol", at, big_total, requests=1)).tier
        == "long-context"
    )
    # Rows without a tier price any sum.
    many = UsageVector(uncached_input=5_000_000)
    priced(price_usage(CATALOG, "anthropic", "claude-opus-5", at, many, requests=None))
