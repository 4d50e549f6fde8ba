"""`pairlab plan`: print an evidence-eval schedule (a dry run, nothing executes)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pairlab.adapters.interventions import load_intervention
from pairlab.adapters.paths import catalog_dir
from pairlab.cli.output import emit_json
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.intervention_wiring import planned_arms, require_supported_arms
from pairlab.core.schedule import QuotaIntervalPlan, Schedule, generate_run_id, plan_schedule
from pairlab.core.schemas.catalog import load_suite
from pairlab.core.schemas.episode import ARMS
from pairlab.core.schemas.intervention_manifest import InterventionIdentity


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


def quota_interval_plan(episodes: int | None, interval_s: float) -> QuotaIntervalPlan | None:
    """The quota-interval option of a plan (None: per-episode snapshots only)."""
    if episodes is None:
        return None
    if not 0 < interval_s <= 86_400:
        raise InvalidInputError(
            f"--quota-interval-s must be in (0, 86400] seconds (got {interval_s:g})",
            reason=ReasonCode.INVALID_INPUT,
        )
    return QuotaIntervalPlan(episodes_per_interval=episodes, interval_s=interval_s)


def print_table(
    schedule: Schedule, suite_id: str, run_id_generated: bool, intervention: InterventionIdentity
) -> None:
    from rich.console import Console
    from rich.table import Table

    note = " (generated)" if run_id_generated else ""
    quota = schedule.quota_intervals
    quota_note = (
        f" · quota intervals: {quota.episodes_per_interval} episode(s) per arm in "
        f"{quota.interval_s:g} s each, {len(schedule.intervals())} intervals "
        f"(at least {len(schedule.intervals()) * quota.interval_s / 60:.0f} min)"
        if quota
        else ""
    )
    table = Table(
        title=f"suite {suite_id} · intervention {intervention.id} {intervention.version} "
        f"({intervention.manifest_sha256[:12]}) · run {schedule.run_id}{note} · seed {schedule.seed} · "
        f"{schedule.repetitions} repetition(s) · {len(schedule.pairs())} pairs{quota_note}",
        title_justify="left",
    )
    for column in ("taskId", "repetition", "order", "arm"):
        table.add_column(column, no_wrap=True)
    id_columns = ("pairId", "episodeId", *(("quotaInterval",) if quota else ()))
    for column in id_columns:
        table.add_column(column, overflow="fold")  # ids are never cut with an ellipsis
    for entry in schedule.entries:
        table.add_row(
            entry.task_id,
            str(entry.repetition),
            str(entry.order),
            entry.arm,
            entry.pair_id,
            entry.episode_id,
            *((entry.quota_interval or "",) if quota else ()),
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
        arms: Annotated[
            str,
            typer.Option(
                help="Comma-separated arms; baseline is required (default: the baseline and "
                "every arm the intervention supports)"
            ),
        ] = "",
        run_id: Annotated[
            str | None, typer.Option(help="Run id (default: a generated one)")
        ] = None,
        catalog: Annotated[
            Path | None,
            typer.Option(
                help="Catalog directory (default: $PAIRLAB_CATALOG_DIR or the repo's catalog/)"
            ),
        ] = None,
        quota_interval_episodes: Annotated[
            int | None,
            typer.Option(
                min=1,
                max=200,
                help="Quota-aware plan: each arm runs this many episodes back to back in one "
                "scheduled quota interval (whole-percent windows need several)",
            ),
        ] = None,
        quota_interval_s: Annotated[
            float,
            typer.Option(help="Length of each scheduled quota interval, seconds"),
        ] = 120.0,
        intervention: Annotated[
            str,
            typer.Option(
                help="What the treated arms run: an id under interventions/ or a manifest's path"
            ),
        ] = "reference",
        as_json: Annotated[bool, typer.Option("--json", help="Print the schedule as JSON")] = False,
    ) -> None:
        """Print the Williams-square schedule of an evidence eval (dry run)."""
        wired = load_intervention(intervention)  # a refused manifest: exit 2
        asked = parse_arms(arms) if arms.strip() else []
        supported = ("baseline", *wired.manifest.supported_arms)
        arms_planned = planned_arms(asked, supported)  # the eval's resolution of the default
        require_supported_arms(wired.manifest, arms_planned)
        loaded = load_suite(catalog_dir(catalog), suite)
        generated = run_id is None
        schedule = plan_schedule(
            [task.id for task in loaded.tasks],
            arms_planned,
            repetitions,
            seed,
            run_id or generate_run_id(),
            quota_intervals=quota_interval_plan(quota_interval_episodes, quota_interval_s),
        )
        if as_json:
            emit_json({**schedule.to_json(), "intervention": wired.identity.to_json()})
        else:
            print_table(schedule, suite, generated, wired.identity)
