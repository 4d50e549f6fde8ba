"""The versioned API price catalog (``catalog/prices/<version>.yaml``) and list-price arithmetic.

A row prices one exact (provider, route, model) over a half-open effective
window ``[effective_from, effective_to)`` (null = open) in USD per million
tokens per billed dimension; a null rate means no published rate. Lookup is
exact: an alias that maps to several models (``claude-sonnet``), an unknown
provider, route or model, a timestamp outside every window, and a captured
dimension (non-null, non-zero tokens) without a rate are all
:class:`NotPriced` -- a value, never a guess of the nearest model.

The long-context tier is decided per request: when the request's prompt
(uncached + cache read + every cache write) is strictly above the row's
threshold, the whole request is priced at the tier's rates; a prompt exactly
at the threshold stays standard. Two money quantities stay apart: the API
list-price equivalent computed here, and the provider-reported actual charge,
carried through only when a receipt supplies one (never reconstructed).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Final, Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.base import StrictModel
from pairlab.core.schemas.usage import BILLED_DIMENSIONS, UsageVector

CATALOG_VERSION: Final = "2026-11-29"  # the newest bundled catalog; a test keeps them in step
RATE_DIMENSIONS: Final = BILLED_DIMENSIONS  # one $/MTok rate per billed usage dimension
PROMPT_DIMENSIONS: Final = RATE_DIMENSIONS[:5]
DEFAULT_ROUTES: Final = {
    "anthropic": "api",
    "openai": "api",
    "google": "gemini-api",
    "github-copilot": "copilot",
}
# Which provider's first-party prices apply to a client's native receipts.
PROVIDER_BY_CLIENT: Final = {
    "claude": "anthropic",
    "codex": "openai",
    "gemini": "google",
    "copilot": "github-copilot",
}
PER_MTOK: Final = Decimal(1_000_000)

Rate = float | None
Tier = Literal["standard", "long-context"]


class Rates(StrictModel):
    """$/MTok per billed dimension (RATE_DIMENSIONS); None = no published rate."""

    uncached_input: Rate = Field(ge=0)
    cache_read: Rate = Field(ge=0)
    cache_write_5m: Rate = Field(ge=0)
    cache_write_1h: Rate = Field(ge=0)
    cache_write_generic: Rate = Field(ge=0)
    output: Rate = Field(ge=0)


class LongContextRates(Rates):
    """Explicit rates of a long-context tier."""


class LongContextTier(StrictModel):
    """Above ``threshold_tokens`` of prompt, the whole request uses multipliers or explicit rates."""

    threshold_tokens: int = Field(gt=0)
    multipliers: dict[str, float] | None = None
    rates: LongContextRates | None = None

    @model_validator(mode="after")
    def _one_form(self) -> LongContextTier:
        if (self.multipliers is None) == (self.rates is None):
            raise ValueError("long_context needs exactly one of multipliers or rates")
        unknown = set(self.multipliers or {}) - set(RATE_DIMENSIONS)
        if unknown:
            raise ValueError(f"long_context multipliers for unknown dimensions {sorted(unknown)}")
        return self


class PriceRow(Rates):
    provider: str = Field(min_length=1)
    route: str = Field(min_length=1)
    model: str = Field(min_length=1)
    effective_from: datetime | None
    effective_to: datetime | None
    long_context: LongContextTier | None
    source_url: str = Field(pattern=r"^https://")
    verified_on: date

    @model_validator(mode="after")
    def _check(self) -> PriceRow:
        for bound in (self.effective_from, self.effective_to):
            if bound is not None and bound.tzinfo is None:
                raise ValueError(f"{self.model}: effective bounds need a UTC offset")
        if self.effective_from and self.effective_to and self.effective_from >= self.effective_to:
            raise ValueError(f"{self.model}: effective_from must precede effective_to")
        tier = self.long_context
        if tier is not None and tier.multipliers is not None:
            missing = [
                d for d in RATE_DIMENSIONS if self.rate(d) is not None and d not in tier.multipliers
            ]
            if missing:
                raise ValueError(f"{self.model}: long_context multipliers missing for {missing}")
        return self

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.provider, self.route, self.model)

    def rate(self, dimension: str, tier: Tier = "standard") -> float | None:
        base: float | None = getattr(self, dimension)
        if tier == "standard" or self.long_context is None:
            return base
        if self.long_context.rates is not None:
            explicit: float | None = getattr(self.long_context.rates, dimension)
            return explicit
        multipliers = self.long_context.multipliers or {}
        return (
            None
            if base is None
            else float(Decimal(str(base)) * Decimal(str(multipliers[dimension])))
        )

    def is_effective_at(self, at: datetime) -> bool:
        after_start = self.effective_from is None or at >= self.effective_from
        before_end = self.effective_to is None or at < self.effective_to
        return after_start and before_end


def _overlaps(a: PriceRow, b: PriceRow) -> bool:
    a_end_after_b_start = (
        a.effective_to is None or b.effective_from is None or a.effective_to > b.effective_from
    )
    b_end_after_a_start = (
        b.effective_to is None or a.effective_from is None or b.effective_to > a.effective_from
    )
    return a_end_after_b_start and b_end_after_a_start


class PriceCatalog(StrictModel):
    version: str = Field(min_length=1)
    verified_on: date
    rows: list[PriceRow]
    # provider -> alias -> model ids; an alias with several targets is ambiguous (Not priced).
    aliases: dict[str, dict[str, list[str]]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _no_overlaps(self) -> PriceCatalog:
        by_key: dict[tuple[str, str, str], list[PriceRow]] = {}
        for row in self.rows:
            for other in by_key.get(row.key, []):
                if _overlaps(row, other):
                    raise ValueError(f"overlapping effective windows for {'/'.join(row.key)}")
            by_key.setdefault(row.key, []).append(row)
        models = {(r.provider, r.model) for r in self.rows}
        for provider, aliases in self.aliases.items():
            for alias, targets in aliases.items():
                if not targets or (provider, alias) in models:
                    raise ValueError(f"alias {provider}/{alias} is empty or shadows a model id")
                if len(targets) == 1 and (provider, targets[0]) not in models:
                    raise ValueError(
                        f"alias {provider}/{alias} points to unknown model {targets[0]}"
                    )
        return self


@dataclass(frozen=True)
class NotPriced:
    """Why a usage vector has no list price (an expected outcome, not an error)."""

    code: str
    reason: str

    @property
    def priced(self) -> bool:
        return False


@dataclass(frozen=True)
class PriceTerm:
    dimension: str
    tokens: int
    rate_per_mtok: float | None
    usd: float | None


@dataclass(frozen=True)
class PricedUsage:
    api_list_price_usd: float
    terms: tuple[PriceTerm, ...]
    tier: Tier
    row: PriceRow
    catalog_version: str
    provider_reported_charge_usd: float | None = None  # only from a receipt; never derived

    @property
    def priced(self) -> bool:
        return True


def default_prices_dir() -> Path:
    """``$PAIRLAB_CATALOG_DIR/prices`` if set, else the checkout's ``catalog/prices``."""
    catalog = os.environ.get("PAIRLAB_CATALOG_DIR", "")
    root = Path(catalog) if catalog else Path(__file__).resolve().parents[2] / "catalog"
    return root / "prices"


def load_catalog(path: Path | str | None = None) -> PriceCatalog:
    """Load and validate a catalog file; a directory (or None) means its newest version."""
    target = Path(path) if path is not None else default_prices_dir()
    if target.is_dir():
        files = sorted(target.glob("*.yaml"))
        if not files:
            raise InvalidInputError(f"no price catalog in {target}", reason=ReasonCode.NOT_FOUND)
        target = files[-1]
    try:
        data = yaml.safe_load(target.read_text(encoding="utf-8"))
        return PriceCatalog.model_validate(data)
    except OSError as exc:
        raise InvalidInputError(
            f"cannot read {target}: {exc}", reason=ReasonCode.INPUT_READ_FAILED
        ) from exc
    except (yaml.YAMLError, ValidationError) as exc:
        raise InvalidInputError(
            f"invalid price catalog {target}: {exc}", reason=ReasonCode.INVALID_PRICE_CATALOG
        ) from exc


def lookup_row(
    catalog: PriceCatalog, provider: str, model: str, at: datetime, route: str | None = None
) -> PriceRow | NotPriced:
    """The one row for exactly this provider, route, model and timestamp, or why there is none."""
    if at.tzinfo is None:
        raise InvalidInputError("price lookup needs a timestamp with a UTC offset")
    route = route or DEFAULT_ROUTES.get(provider)
    provider_rows = [r for r in catalog.rows if r.provider == provider]
    if not provider_rows or route is None:
        return NotPriced("unknown-provider", f"no catalog rows for provider {provider!r}")
    route_rows = [r for r in provider_rows if r.route == route]
    if not route_rows:
        return NotPriced("unknown-route", f"no catalog rows for route {provider}/{route}")
    model_rows = [r for r in route_rows if r.model == model]
    if not model_rows:
        targets = catalog.aliases.get(provider, {}).get(model)
        if targets is not None and len(targets) > 1:
            return NotPriced(
                "ambiguous-model",
                f"{model!r} is ambiguous: it may mean any of {', '.join(targets)}",
            )
        if targets is not None:
            return lookup_row(catalog, provider, targets[0], at, route)
        return NotPriced("unknown-model", f"no catalog rows for {provider}/{route}/{model}")
    for row in model_rows:
        if row.is_effective_at(at):
            return row
    return NotPriced(
        "no-rate-at-timestamp", f"no {provider}/{route}/{model} rate effective at {at.isoformat()}"
    )


def _tier(row: PriceRow, usage: UsageVector, requests: int | None) -> Tier | NotPriced:
    if row.long_context is None:
        return "standard"
    observed = [getattr(usage, d) for d in PROMPT_DIMENSIONS if getattr(usage, d) is not None]
    if not observed:
        return NotPriced(
            "tier-undecidable", "no prompt tokens observed to decide the long-context tier"
        )
    if sum(observed) <= row.long_context.threshold_tokens:
        return "standard"  # no request of a sum at or under the threshold can be above it
    if requests == 1:
        return "long-context"
    # A sum over several requests above the threshold says nothing about any one request.
    count = "an unknown number of" if requests is None else str(requests)
    return NotPriced(
        "tier-undecidable",
        f"prompt tokens summed over {count} requests exceed the long-context threshold; "
        "the tier is per request, so price each request's usage",
    )


def price_usage(
    catalog: PriceCatalog,
    provider: str,
    model: str,
    at: datetime,
    usage: UsageVector,
    *,
    route: str | None = None,
    requests: int | None = 1,
    provider_reported_charge_usd: float | None = None,
) -> PricedUsage | NotPriced:
    """The API list-price equivalent of a usage vector, term by term.

    ``requests`` is how many API requests the vector sums (1 = one request; an
    episode total passes its ``api_calls``, None when unknown). A summed vector is
    priced only when the tier is certain: at or under the threshold in total, or
    a single request.
    """
    row = lookup_row(catalog, provider, model, at, route)
    if isinstance(row, NotPriced):
        return row
    if all(getattr(usage, d) is None for d in RATE_DIMENSIONS):
        return NotPriced("empty-usage", "no billed dimension was observed")
    tier = _tier(row, usage, requests)
    if isinstance(tier, NotPriced):
        return tier
    terms: list[PriceTerm] = []
    total = Decimal(0)
    for dimension in RATE_DIMENSIONS:
        tokens: int | None = getattr(usage, dimension)
        if tokens is None:
            continue  # not observed: no term (null is not zero)
        rate = row.rate(dimension, tier)
        if rate is None:
            if tokens:
                return NotPriced(
                    "dimension-without-rate",
                    f"{tokens} {dimension} tokens captured but {row.model} has no published "
                    f"{dimension} rate ({tier} tier)",
                )
            terms.append(PriceTerm(dimension, 0, None, 0.0))
            continue
        usd = Decimal(tokens) * Decimal(str(rate)) / PER_MTOK
        total += usd
        terms.append(PriceTerm(dimension, tokens, rate, float(usd)))
    return PricedUsage(
        float(total), tuple(terms), tier, row, catalog.version, provider_reported_charge_usd
    )


def price_json(result: PricedUsage | NotPriced, catalog_version: str) -> dict[str, Any]:
    """The ``pairlab price --json`` shape."""
    if isinstance(result, NotPriced):
        return {
            "priced": False,
            "api_list_price_usd": None,
            "terms": [],
            "tier": None,
            "reason": result.reason,
            "reason_code": result.code,
            "catalog_version": catalog_version,
        }
    return {
        "priced": True,
        "api_list_price_usd": result.api_list_price_usd,
        "terms": [
            {
                "dimension": t.dimension,
                "tokens": t.tokens,
                "rate_per_mtok": t.rate_per_mtok,
                "usd": t.usd,
            }
            for t in result.terms
        ],
        "tier": result.tier,
        "reason": None,
        "catalog_version": catalog_version,
        "model": result.row.model,
        "route": result.row.route,
        "source_url": result.row.source_url,
        "verified_on": result.row.verified_on.isoformat(),
        "provider_reported_charge_usd": result.provider_reported_charge_usd,
    }
