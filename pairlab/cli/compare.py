"""``pairlab compare ARTIFACT [--json] [--explain]``: the offline verdict on a loom artifact.

Comparison mode takes nothing but the artifact: loom's twelve explicit
selection flags (``--since``, ``--until``, ``--provider``, ``--claude-root``,
``--codex-root``, ``--receipts-root``, ``--forward-receipts-root``,
``--project``, ``--all``, ``--stage``, ``--plan``, ``--windows``) are
registered (hidden) only to be refused with ``comparison-selection-conflict``
and exit 2 — passing one counts, whatever its value. The exit code is the
verdict's: 0 supported-candidate, 1 rejected, 2 inconclusive or an unreadable,
malformed or oversized artifact (``--json`` still prints the report).
``--explain`` prints which rule decided each verdict, in plain words (to
stderr when ``--json`` holds stdout).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pairlab.cli.output import emit_json
from pairlab.core.verdict import VerdictReason, render_explanation, render_text
from pairlab.core.verdict.engine import judge_file
from pairlab.core.verdict.outcome import Finding
from pairlab.core.verdict.report import VerdictReport, refused

# loom's explicit selection flags; every one is refused in comparison mode.
SELECTION_FLAGS = (
    "--since",
    "--until",
    "--provider",
    "--claude-root",
    "--codex-root",
    "--receipts-root",
    "--forward-receipts-root",
    "--project",
    "--all",
    "--stage",
    "--plan",
    "--windows",
)

Selection = Annotated[str | None, typer.Option(hidden=True)]


def selection_conflict(flags: list[str]) -> VerdictReport:
    return refused(
        Finding(
            VerdictReason.COMPARISON_SELECTION_CONFLICT,
            f"comparison mode takes only the artifact; refused {', '.join(flags)}",
        )
    )


def compare(
    artifact: Annotated[Path, typer.Argument(help="loom version-1 comparison artifact (JSON).")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable result.")] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="Which rule decided each verdict, in plain words.")
    ] = False,
    since: Selection = None,
    until: Selection = None,
    provider: Selection = None,
    claude_root: Selection = None,
    codex_root: Selection = None,
    receipts_root: Selection = None,
    forward_receipts_root: Selection = None,
    project: Selection = None,
    all_: Annotated[bool, typer.Option("--all", hidden=True)] = False,
    stage: Selection = None,
    plan: Selection = None,
    windows: Selection = None,
) -> None:
    """Judge a paired canary artifact offline: subscription, quality, latency (and the token proxy)."""
    given = (
        since,
        until,
        provider,
        claude_root,
        codex_root,
        receipts_root,
        forward_receipts_root,
        project,
        True if all_ else None,
        stage,
        plan,
        windows,
    )
    explicit = [
        flag for flag, value in zip(SELECTION_FLAGS, given, strict=True) if value is not None
    ]
    report = selection_conflict(explicit) if explicit else judge_file(artifact)
    if as_json:
        emit_json(report.to_json())
        if explain:
            typer.echo(render_explanation(report), err=True)
    else:
        typer.echo(render_explanation(report) if explain else render_text(report))
    raise typer.Exit(report.exit_code)


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
