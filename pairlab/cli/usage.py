"""``pairlab usage CLIENT PATH... [--json] [--per-file]``: read one episode's native usage.

The given files together are one episode (dedupe and replay rules span them);
``--per-file`` reads each file on its own. Directories are scanned recursively.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pairlab.adapters.usage import READERS, make_reader, read_usage
from pairlab.adapters.usage.base import UsageReport, expand_paths
from pairlab.cli.output import emit_json
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.usage import USAGE_DIMENSIONS


def _human(report: UsageReport) -> str:
    v = report.vector
    lines = [
        f"{report.provider}: {len(report.paths)} file(s), api_calls={report.api_calls}, "
        f"session={report.session_id}, cli_version={report.cli_version}",
        "  " + "  ".join(f"{d}={getattr(v, d)}" for d in USAGE_DIMENSIONS),
    ]
    for model, mu in report.by_model.items():
        lines.append(f"  {model}: calls={mu.api_calls} output={mu.vector.output}")
    if not report.sidechain_vector.is_empty():
        lines.append(f"  sidechain output={report.sidechain_vector.output}")
    if report.provider_reported_cost_usd is not None:
        lines.append(f"  provider-reported cost: ${report.provider_reported_cost_usd:.6f}")
    for obs in report.quota_observations:
        lines.append(f"  quota {obs.window}: {obs.used_percent}% resets {obs.resets_at}")
    lines.append("  provenance: " + ", ".join(f"{k}={n}" for k, n in report.provenance.items()))
    lines.extend(f"  issue: {i}" for i in report.issues)
    return "\n".join(lines)


def usage_command(
    client: Annotated[str, typer.Argument(help=f"one of: {', '.join(READERS)}")],
    paths: Annotated[list[Path], typer.Argument(help="files or directories (one episode)")],
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    per_file: Annotated[bool, typer.Option("--per-file", help="one report per file")] = False,
) -> None:
    """Normalised usage vector of one episode's provider-native records."""
    make_reader(client)  # an unknown client is invalid input before any path is checked
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise InvalidInputError(f"no such file: {', '.join(missing)}", reason=ReasonCode.NOT_FOUND)
    if per_file:
        reports = [read_usage(client, [f]) for f in expand_paths(paths)]
    else:
        reports = [read_usage(client, paths)]
    if as_json:
        payload: Any = [r.to_json() for r in reports] if per_file else reports[0].to_json()
        emit_json(payload)
        return
    typer.echo("\n".join(_human(r) for r in reports))


def register(app: typer.Typer) -> None:
    app.command("usage")(usage_command)
