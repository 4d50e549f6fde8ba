"""`pairlab plan`: print an evidence-eval schedule (a dry run, nothing executes)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pairlab.adapters.paths import catalog_dir
from pairlab.cli.output import emit_json
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.plan import Schedule, generate_run_id, plan_schedule
from pairlab.core.schemas.catalog import load_suite
from pairlab.core.schemas.episode import ARMS


def parse_arms(value: str) -> list[str]:
    arms = [part.strip() for part in value.split(",") if part.strip()]
    unknown = [arm for arm in arms if arm not in ARMS]
    if unknown:
        raise InvalidInputError(
            f"unknown arm(s) {', '.join(unknown)} (known: {', '.join(ARMS)})",
            reason=ReasonCode.INVALID_INPUT,
        )
    if "baseline" not in arms:
        raise InvalidInputError("--arms must include baseline", reason=ReasonCode.INVALID_INPUT)
    return arms


def print_table(schedule: Schedule, suite_id: str, run_id_generated: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    note = " (generated)" if run_id_generated else ""
    table = Table(
        title=f"suite {suite_id} · run {schedule.run_id}{note} · seed {schedule.seed} · "
        f"{schedule.repetitions} repetition(s) · {len(schedule.pairs())} pairs",
        title_justify="left",
    )
    for column in ("taskId", "repetition", "order", "arm"):
        table.add_column(column, no_wrap=True)
    for column in ("pairId", "episodeId"):
        table.add_column(column, overflow="fold")  # ids are never cut with an ellipsis
    for entry in schedule.entries:
        table.add_row(
            entry.task_id,
            str(entry.repetition),
            str(entry.order),
            entry.arm,
            entry.pair_id,
            entry.episode_id,
        )
    console = Console()
    if not console.is_terminal:  # piped: as wide as the table needs, nothing truncated
        console = Console(width=10_000)
    console.print(table)


def register(app: typer.Typer) -> None:
    @app.command("plan")
    def plan_cmd(
        suite: Annotated[str, typer.Option(help="Task suite id (catalog/suites/<id>.yaml)")],
        repetitions: Annotated[int, typer.Option(min=1, help="Repetitions (pairs) per task")],
        seed: Annotated[int, typer.Option(help="Seed of the row order; recorded on the schedule")],
        arms: Annotated[str, typer.Option(help="Comma-separated arms")] = ",".join(ARMS),
        run_id: Annotated[
            str | None, typer.Option(help="Run id (default: a generated one)")
        ] = None,
        catalog: Annotated[
            Path | None,
            typer.Option(
                help="Catalog directory (default: $PAIRLAB_CATALOG_DIR or the repo's catalog/)"
            ),
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the schedule as JSON")] = False,
    ) -> None:
        """Print the Williams-square schedule of an evidence eval (dry run)."""
        loaded = load_suite(catalog_dir(catalog), suite)
        generated = run_id is None
        schedule = plan_schedule(
            [task.id for task in loaded.tasks],
            parse_arms(arms),
            repetitions,
            seed,
            run_id or generate_run_id(),
        )
        if as_json:
            emit_json(schedule.to_json())
        else:
            print_table(schedule, suite, generated)
