"""`pairlab aggregate EPISODES.jsonl`: paired cohort effects of an episode log.

Every line is parsed and validated (a malformed line is an error naming its line
number, exit 2; nothing is skipped). The run id that seeds the bootstrap is
``--run-id``, else the records' ``runId`` when they share one, else the file's
name, so the same file always gives the same intervals.

The study plan whose decision rule labels the effects: ``--plan FILE`` (a plan
YAML, or a run's frozen ``plan.json``), else the ``plan.json`` beside the
episode log (a run directory), else the default plan. The gate: ``--min-pairs``,
else $TOKEN_OPTIMIZER_EVAL_MIN_PAIRS, else the plan's minimum pairs; a gate
below the plan's minimum makes the analysis exploratory (said in the output).

``--json`` is compact (one line: 10,000 cohorts are ~30% fewer bytes than indented);
``--pretty`` indents it. Either way the same JSON values (:mod:`pairlab.cli.output`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pairlab.cli.json_stream import emit_json_stream
from pairlab.cli.output import emit_json
from pairlab.core.analysis.study_plan import (
    FROZEN_PLAN_NAME,
    ResolvedPlan,
    default_plan,
    load_plan_file,
    read_frozen_plan,
)
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.episode import EpisodeRecord, iter_episode_lines

if TYPE_CHECKING:
    import polars as pl


@contextmanager
def _log_errors(path: Path) -> Iterator[None]:
    """A missing or unreadable log is invalid input with its reason."""
    try:
        yield
    except FileNotFoundError as exc:
        raise InvalidInputError(f"{path}: no such file", reason=ReasonCode.NOT_FOUND) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(
            f"{path}: cannot read ({exc})", reason=ReasonCode.INPUT_READ_FAILED
        ) from exc


def read_episode_log(path: Path) -> list[EpisodeRecord]:
    with _log_errors(path), path.open(encoding="utf-8") as handle:
        return list(iter_episode_lines(handle, source=str(path)))


def read_episode_frame(path: Path) -> pl.DataFrame:
    """The log as the analysis frame, streamed: each line validated as it is read (the
    same errors as :func:`read_episode_log`), no record kept beyond its columns; a large
    log is read by two processes (:mod:`pairlab.core.analysis.episode_log`)."""
    from pairlab.core.analysis.episode_log import read_frame

    with _log_errors(path):
        return read_frame(path, str(path))


def choose_run_id(explicit: str | None, run_ids: Collection[str | None], path: Path) -> str:
    """``explicit``, else the one run id every record carries, else the file's name."""
    if explicit:
        return explicit
    found = set(run_ids)
    if len(found) == 1 and None not in found:
        return str(next(iter(found)))
    return path.name


def plan_for(explicit: Path | None, episodes: Path) -> ResolvedPlan:
    """``explicit`` (YAML plan or frozen plan.json), else the run's frozen plan, else default."""
    from pairlab.core.analysis.cohorts import resolve_min_pairs

    if explicit is not None:
        if explicit.name.endswith(".json"):
            return read_frozen_plan(explicit)
        return ResolvedPlan.of(load_plan_file(explicit), "file", str(explicit))
    frozen = episodes.parent / FROZEN_PLAN_NAME
    if frozen.is_file():
        return read_frozen_plan(frozen)
    return ResolvedPlan.of(default_plan(resolve_min_pairs(None)), "default")


def register(app: typer.Typer) -> None:
    @app.command("aggregate")
    def aggregate(
        episodes: Annotated[Path, typer.Argument(help="episode log (JSON lines, schema v2)")],
        min_pairs: Annotated[
            int | None,
            typer.Option(
                "--min-pairs",
                help="pairs a cohort needs before it may claim an effect "
                "(default: $TOKEN_OPTIMIZER_EVAL_MIN_PAIRS, else 5; at least 2)",
            ),
        ] = None,
        run_id: Annotated[
            str | None,
            typer.Option("--run-id", help="run id that seeds the bootstrap"),
        ] = None,
        resamples: Annotated[
            int, typer.Option("--resamples", help="bootstrap resamples per interval")
        ] = 10_000,
        bca: Annotated[
            bool, typer.Option("--bca", help="BCa reported intervals instead of percentile")
        ] = False,
        plan: Annotated[
            Path | None,
            typer.Option(
                "--plan",
                help="study plan (YAML, or a run's plan.json; default: plan.json beside the "
                "log, else the default plan)",
            ),
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print JSON (compact)")] = False,
        pretty: Annotated[
            bool, typer.Option("--pretty", help="with --json: indent the JSON by two spaces")
        ] = False,
    ) -> None:
        """Per-cohort paired effects with bootstrap intervals and correctness."""
        # Imported here: scipy/polars take seconds to import, every other command would pay it.
        from pairlab.core.analysis.cohorts import analyse_cohorts, render_cohort_table, resolve_gate

        resolved = plan_for(plan, episodes)
        gate = resolve_gate(min_pairs, resolved)
        frame = read_episode_frame(episodes)
        analysis = analyse_cohorts(
            frame,
            run_id=choose_run_id(run_id, frame["runId"].unique().to_list(), episodes),
            min_pairs=gate,
            n_resamples=resamples,
            method="bca" if bca else "percentile",
            plan=resolved,
        )
        if as_json:  # each cohort's effects pre-encoded: the same bytes as to_json()'s dicts
            from pairlab.core.analysis.result_fragments import json_parts, json_with_fragments

            if pretty:  # indented: one document (a cohort's indent depends on its place)
                emit_json(json_with_fragments(analysis, pretty=True), pretty=True)
            else:  # compact: the cohorts encoded in blocks while earlier ones are written
                head, cohorts = json_parts(analysis, pretty=False)
                emit_json_stream(head, "cohorts", cohorts)
        else:
            typer.echo(render_cohort_table(analysis), nl=False)
