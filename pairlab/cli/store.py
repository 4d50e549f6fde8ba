"""`pairlab publish`, `pairlab pull` and `pairlab runs list`: runs in an object store.

Store URLs: ``s3://bucket/prefix`` (standard AWS configuration, DESIGN 11), a
local path or ``file://path``. Errors (secrets found, incomplete run, integrity
failure, S3 unreachable) are raised and mapped to exit codes by the CLI package.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from pairlab.adapters.store import open_store
from pairlab.adapters.store.runs import list_runs, pull_run, split_run_url
from pairlab.cli.output import emit_json


def register(app: typer.Typer) -> None:
    @app.command("publish")
    def publish_cmd(
        run_dir: Annotated[Path, typer.Argument(help="The local run directory (runs/<run_id>)")],
        to: Annotated[str, typer.Option("--to", help="Store URL: s3://bucket/prefix or a path")],
        on_secret: Annotated[
            Literal["redact", "refuse"],
            typer.Option(
                "--on-secret", help="redact findings, or refuse to publish when any is found"
            ),
        ] = "redact",
        include_transcripts: Annotated[
            bool | None,
            typer.Option(
                "--include-transcripts/--withhold-transcripts",
                help="Publish the episodes' raw client records (default: what the run asked for)",
            ),
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON")] = False,
    ) -> None:
        """Redact and publish a run: every object first, manifest.json last (idempotent)."""
        from pairlab.adapters.store.publish import publish_run_detailed  # polars: import on use

        store = open_store(to)
        outcome = publish_run_detailed(
            run_dir, store, policy=on_secret, include_transcripts=include_transcripts
        )
        if as_json:
            emit_json(outcome.to_json(store.url))
            return
        findings = outcome.manifest.redaction.findings_by_kind
        redacted = ", ".join(f"{k} x{n}" for k, n in findings.items()) or "none"
        typer.echo(
            f"published {outcome.manifest.run_id} to {store.url}: "
            f"{len(outcome.uploaded)} uploaded, {len(outcome.skipped)} already present, "
            f"{len(outcome.manifest.objects)} objects; redacted: {redacted}"
        )

    @app.command("pull")
    def pull_cmd(
        url: Annotated[str, typer.Argument(help="<store URL>/runs/<run_id>")],
        to: Annotated[
            Path | None, typer.Option("--to", help="Destination directory (default ./runs/<id>)")
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON")] = False,
    ) -> None:
        """Download a complete run, verifying every hash; resumes a partial download."""
        store_url, run_id = split_run_url(url)
        dest = to if to is not None else Path("runs") / run_id
        outcome = pull_run(open_store(store_url), run_id, dest)
        if as_json:
            emit_json(outcome.to_json())
            return
        typer.echo(
            f"pulled {run_id} into {dest}: {len(outcome.downloaded)} downloaded, "
            f"{len(outcome.skipped)} already present and verified"
        )

    runs_app = typer.Typer(help="Runs held in an object store.", no_args_is_help=True)

    @runs_app.command("list")
    def list_cmd(
        url: Annotated[str, typer.Argument(help="Store URL: s3://bucket/prefix or a path")],
        as_json: Annotated[bool, typer.Option("--json", help="Print the runs as JSON")] = False,
    ) -> None:
        """List runs with their status (complete only when the manifest and its objects exist)."""
        rows = list_runs(open_store(url))
        if as_json:
            emit_json({"url": url, "runs": [row.model_dump(mode="json") for row in rows]})
            return
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"runs in {url}", title_justify="left")
        for column in ("run_id", "time", "status", "kind", "cohorts", "verdict", "objects"):
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(
                row.run_id,
                row.time.isoformat() if row.time else "-",
                row.status,
                row.kind or "-",
                "-" if row.cohorts is None else str(row.cohorts),
                row.verdict or "-",
                str(row.objects),
            )
        console = Console()
        if not console.is_terminal:
            console = Console(width=10_000)
        console.print(table)

    app.add_typer(runs_app, name="runs")
