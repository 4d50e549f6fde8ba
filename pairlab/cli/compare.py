"""``pairlab compare ARTIFACT [--json]``: the offline verdict on a comparison artifact.

Comparison mode takes nothing but the artifact: explicit transcript-selection,
provider, root, project, stage, plan and window flags are registered (hidden)
only so they can be refused with ``comparison-selection-conflict`` and exit 2.
The exit code is the verdict's: 0 supported-candidate, 1 rejected, 2 inconclusive
or unreadable/malformed/oversized input (JSON is still printed with ``--json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pairlab.cli.output import emit_json
from pairlab.core.verdict import VerdictReason, VerdictReport, judge_file, render_text
from pairlab.core.verdict.loading import Problem
from pairlab.core.verdict.outcome import Verdict

# Explicit selection flags of `usage` mode; every one is refused in comparison mode.
SELECTION_FLAGS = (
    "--provider",
    "--since",
    "--until",
    "--session",
    "--transcript",
    "--root",
    "--claude-root",
    "--codex-root",
    "--gemini-root",
    "--forward-receipts-root",
    "--project",
    "--stage",
    "--plan",
    "--windows",
)

Selection = Annotated[str | None, typer.Option(hidden=True)]


def selection_conflict(flags: list[str]) -> VerdictReport:
    reason = VerdictReason.COMPARISON_SELECTION_CONFLICT
    return VerdictReport(
        Verdict.INCONCLUSIVE,
        reasons=frozenset({reason}),
        problems=tuple(Problem(flag, reason) for flag in flags),
    )


def compare(
    artifact: Annotated[Path, typer.Argument(help="Version-1 comparison artifact (JSON).")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable result.")] = False,
    provider: Selection = None,
    since: Selection = None,
    until: Selection = None,
    session: Selection = None,
    transcript: Selection = None,
    root: Selection = None,
    claude_root: Selection = None,
    codex_root: Selection = None,
    gemini_root: Selection = None,
    forward_receipts_root: Selection = None,
    project: Selection = None,
    stage: Selection = None,
    plan: Selection = None,
    windows: Selection = None,
) -> None:
    """Judge a paired canary artifact offline: subscription, quality, latency (and the token proxy)."""
    given = {
        "--provider": provider,
        "--since": since,
        "--until": until,
        "--session": session,
        "--transcript": transcript,
        "--root": root,
        "--claude-root": claude_root,
        "--codex-root": codex_root,
        "--gemini-root": gemini_root,
        "--forward-receipts-root": forward_receipts_root,
        "--project": project,
        "--stage": stage,
        "--plan": plan,
        "--windows": windows,
    }
    explicit = [flag for flag in SELECTION_FLAGS if given[flag] is not None]
    report = selection_conflict(explicit) if explicit else judge_file(artifact)
    if as_json:
        emit_json(report.to_json())
    else:
        typer.echo(render_text(report))
    raise typer.Exit(report.exit_code)


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
