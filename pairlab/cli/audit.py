"""``pairlab audit-savings`` (read-only ledger audit) and ``pairlab ledger record|ingest``.

Exit codes: audit-savings 0 on a report; ledger record 0 when stored qualified or
a duplicate retry, 1 when stored but excluded (rejected from the headline),
2 on invalid JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from pairlab.adapters.mcp_ledger.audit import audit_path
from pairlab.adapters.mcp_ledger.db import LedgerWriter, ingest_jsonl
from pairlab.cli.output import emit_json
from pairlab.core.errors import InvalidInputError, ReasonCode


def _fmt(value: object) -> str:
    return (
        "n/a (nothing qualified)"
        if value is None
        else f"{value:,}"
        if isinstance(value, int)
        else str(value)
    )


def _render_section(report: dict[str, Any], indent: str = "") -> list[str]:
    lines = [
        f"{indent}verified net MCP transport avoided: {_fmt(report['verified_net_tokens'])} tokens",
        f"{indent}gross verified reduction:          {_fmt(report['gross_reduction_tokens'])} tokens",
        f"{indent}expansion debits:                  {_fmt(report['expansion_debit_tokens'])} tokens",
        f"{indent}observed returned context:         {_fmt(report['observed_returned_tokens'])} tokens",
        f"{indent}ledgers {report['ledgers']}, qualified rows {report['qualified_rows']}, "
        f"excluded rows {report['excluded_count']}, duplicate retries ignored "
        f"{report['duplicate_retries_ignored']}, malformed lines {report['malformed_lines']}",
    ]
    orphans = report["flags"]["expansion-without-preview"]
    if orphans:
        lines.append(f"{indent}expansions without a qualified preview (still debited): {orphans}")
    if report["excluded_by_reason"]:
        lines.append(f"{indent}excluded claims by reason:")
        for reason, count in report["excluded_by_reason"].items():
            claimed = report["excluded_claimed_tokens_by_reason"][reason]
            lines.append(f"{indent}  {reason}: {count} rows, claimed {_fmt(claimed)} tokens")
    if report["by_tool"]:
        lines.append(f"{indent}per tool (net / gross / debit, share of gross):")
        for tool, t in report["by_tool"].items():
            share = "n/a" if t["share_of_gross"] is None else f"{t['share_of_gross']:.1%}"
            lines.append(
                f"{indent}  {tool}: {t['verified_net_tokens']:,} / {t['gross_reduction_tokens']:,}"
                f" / {t['expansion_debit_tokens']:,}, {share}"
            )
    return lines


def render_audit(report: dict[str, Any]) -> str:
    lines = [f"Savings audit of {report['source']['kind']} {report['source']['path']} (read-only)"]
    lines += _render_section(report)
    if report["largest_excluded"]:
        lines.append("largest excluded rows:")
        for row in report["largest_excluded"]:
            lines.append(
                f"  {row['ledger']} {row['tool']} {row['kind']} rpc={row['rpc_id']} "
                f"claimed {_fmt(row['claimed_tokens'])}: {', '.join(row['reasons'])}"
            )
    for arm, section in report.get("by_arm", {}).items():
        lines.append(f"arm {arm}:")
        lines += _render_section(section, indent="  ")
    tok = report["tokenizer"]
    lines.append(
        f"tokenizer: rows {', '.join(tok['row_encodings']) or '-'}; local {', '.join(tok['local_encoding'])}"
    )
    lines.append(f"note: {tok['note']}")
    return "\n".join(lines)


def audit_savings(
    path: Annotated[
        Path, typer.Argument(help="ledger.db, an episode dir, or a run dir (runs/<run_id>)")
    ] = Path("ledger.db"),
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable report")] = False,
) -> None:
    """Audit MCP transport savings read-only: verified net, gross, debits, exclusions, per tool/arm."""
    report = audit_path(path)
    if as_json:
        emit_json(report)
    else:
        typer.echo(render_audit(report))


def _parse_row(text: str) -> dict[str, object]:
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"ROW_JSON is not valid JSON: {exc}", reason=ReasonCode.MALFORMED_INPUT
        ) from exc
    if not isinstance(row, dict):
        raise InvalidInputError("ROW_JSON must be a JSON object", reason=ReasonCode.MALFORMED_INPUT)
    return row


def ledger_record(
    row_json: Annotated[
        str, typer.Argument(metavar="ROW_JSON", help="one LEDGER ROW as a JSON object")
    ],
    db: Annotated[Path, typer.Option("--db", help="ledger database (created if missing)")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Append one row through the validated writer: stored, duplicate, or stored but excluded."""
    row = _parse_row(row_json)
    with LedgerWriter(db) as writer:
        outcome = writer.record(row)
    if as_json:
        emit_json(outcome.to_json())
    else:
        typer.echo(outcome.describe())
    if outcome.status == "stored" and not outcome.is_qualified:
        raise typer.Exit(1)


def ledger_ingest(
    jsonl: Annotated[
        Path, typer.Argument(help="a JSONL file of ledger rows (e.g. $STATE/mcp-ledger.jsonl)")
    ],
    db: Annotated[Path, typer.Option("--db", help="ledger database (created if missing)")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Append every row of a JSONL file through the validated writer."""
    summary = ingest_jsonl(jsonl, db)
    if as_json:
        emit_json(summary.__dict__)
    else:
        typer.echo(
            f"{summary.lines} lines: {summary.stored} stored ({summary.qualified} qualified, "
            f"{summary.excluded} excluded), {summary.duplicates} duplicates, {summary.malformed} malformed"
        )


def register(app: typer.Typer) -> None:
    app.command("audit-savings")(audit_savings)
    ledger = typer.Typer(help="The MCP transport measurement ledger.", no_args_is_help=True)
    ledger.command("record")(ledger_record)
    ledger.command("ingest")(ledger_ingest)
    app.add_typer(ledger, name="ledger")
