"""``pairlab report RUN_DIR|STORE_URL/runs/ID [--html|--md|--json] [--out DIR] [--check]``.

Re-renders a finished or pulled evidence-eval run's report from what the run
stored (``run.json``, ``plan.json``, ``episodes.jsonl``, ``quota-intervals.jsonl``)
without re-running anything; a store URL is pulled first, every object verified
(``--to`` picks where, default ``./runs/<id>``). The rendering goes to stdout
(markdown unless ``--html`` or ``--json``) byte for byte as the run wrote it;
``--out DIR`` writes all three files instead; ``--check`` compares the renderings
with the run's own report files and exits 1 naming any that differ.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from pairlab.core.errors import InvalidInputError, ReasonCode


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report_cmd(
        source: Annotated[
            str,
            typer.Argument(
                help="A run directory, or <store>/runs/<run_id> (s3://bucket/prefix/runs/ID)"
            ),
        ],
        html: Annotated[bool, typer.Option("--html", help="Print report.html")] = False,
        md: Annotated[bool, typer.Option("--md", help="Print report.md (the default)")] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print report.json")] = False,
        out: Annotated[
            Path | None, typer.Option("--out", help="Write report.{md,json,html} into DIR")
        ] = None,
        to: Annotated[
            Path | None,
            typer.Option("--to", help="Where a store URL is pulled (default ./runs/<id>)"),
        ] = None,
        check: Annotated[
            bool,
            typer.Option(
                "--check", help="Compare with the run's own report files (exit 1 if not equal)"
            ),
        ] = False,
    ) -> None:
        """Re-render a finished run's report from its stored inputs (nothing is re-run)."""
        from pairlab.adapters.run.outputs import write_report_files
        from pairlab.adapters.run.report_source import load_stored_run, locate_run
        from pairlab.core.report.run import REPORT_FILES

        chosen = [name for name, flag in (("html", html), ("md", md), ("json", as_json)) if flag]
        if len(chosen) > 1:
            raise InvalidInputError(
                f"choose one of --html, --md, --json (got {', '.join(chosen)})",
                reason=ReasonCode.INVALID_INPUT,
            )
        path = locate_run(source, to)
        rendered = load_stored_run(path).render()
        if check:
            differ = [
                name
                for name in REPORT_FILES
                if not (path / name).is_file()
                or (path / name).read_bytes() != rendered.text_of(name).encode("utf-8")
            ]
            if differ:
                typer.echo(f"differs from the stored report: {', '.join(differ)}", err=True)
                raise typer.Exit(1)
            typer.echo(f"{path}: {', '.join(REPORT_FILES)} reproduced byte for byte", err=True)
            return
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            for name, written in write_report_files(out, rendered).items():
                typer.echo(f"{name}: {written}")
            return
        name = {"html": "report.html", "json": "report.json"}.get(
            chosen[0] if chosen else "md", "report.md"
        )
        sys.stdout.write(rendered.text_of(name))
        sys.stdout.flush()
