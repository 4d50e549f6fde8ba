"""``pairlab price``: the API list-price equivalent of one usage vector, term by term.

Exit codes: 0 priced, 2 Not priced (inconclusive, reason in the output) or invalid input.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from pairlab.cli.output import emit_json
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.prices import NotPriced, load_catalog, price_json, price_usage
from pairlab.core.schemas.usage import UsageVector


def parse_timestamp(text: str) -> datetime:
    """ISO-8601; a date alone is midnight UTC and a timestamp without offset is taken as UTC."""
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidInputError(f"--at {text!r} is not an ISO-8601 timestamp") from exc
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def parse_usage(text: str) -> UsageVector:
    try:
        return UsageVector.model_validate_json(text)
    except ValidationError as exc:
        raise InvalidInputError(
            f"--usage is not a usage vector ({', '.join(UsageVector.model_fields)}): {exc}",
            reason=ReasonCode.MALFORMED_INPUT,
        ) from exc


def price(
    provider: Annotated[str, typer.Option(help="anthropic, openai, google, github-copilot")],
    model: Annotated[str, typer.Option(help="exact model id (aliases only when unambiguous)")],
    at: Annotated[str, typer.Option("--at", help="request timestamp, ISO-8601 (UTC if no offset)")],
    usage: Annotated[
        str, typer.Option(help='usage JSON, e.g. {"uncached_input": 1200, "output": 300}')
    ],
    route: Annotated[
        str | None, typer.Option(help="route; default the provider's first-party API")
    ] = None,
    catalog: Annotated[
        Path | None, typer.Option(help="catalog file or dir (default: newest bundled)")
    ] = None,
    requests: Annotated[
        int, typer.Option(min=1, help="how many API requests the usage sums (tier is per request)")
    ] = 1,
    charge_usd: Annotated[
        float | None,
        typer.Option("--reported-charge-usd", help="provider-reported charge from a receipt"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Price one request's usage at API list prices and explain each term."""
    loaded = load_catalog(catalog)
    result = price_usage(
        loaded,
        provider,
        model,
        parse_timestamp(at),
        parse_usage(usage),
        route=route,
        requests=requests,
        provider_reported_charge_usd=charge_usd,
    )
    payload = price_json(result, loaded.version)
    if as_json:
        emit_json(payload)
    else:
        typer.echo(render_price(payload, json.loads(usage)))
    if isinstance(result, NotPriced):
        raise typer.Exit(2)


def render_price(payload: dict[str, object], usage: object) -> str:
    lines = [f"price catalog {payload['catalog_version']}; usage {json.dumps(usage)}"]
    if not payload["priced"]:
        lines.append(f"Not priced: {payload['reason']}")
        return "\n".join(lines)
    lines.append(f"{payload['route']}/{payload['model']}, {payload['tier']} tier")
    terms = payload["terms"]
    assert isinstance(terms, list)
    for term in terms:
        rate = "no rate" if term["rate_per_mtok"] is None else f"${term['rate_per_mtok']}/MTok"
        lines.append(
            f"  {term['dimension']}: {term['tokens']:,} tokens x {rate} = ${term['usd']:.6f}"
        )
    lines.append(
        f"API list-price equivalent: ${payload['api_list_price_usd']:.6f} (not an invoice)"
    )
    charge = payload["provider_reported_charge_usd"]
    if charge is not None:
        lines.append(f"provider-reported actual charge: ${charge:.6f}")
    lines.append(f"source: {payload['source_url']} (verified {payload['verified_on']})")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    app.command("price")(price)
