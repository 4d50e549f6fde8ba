"""`pairlab power PILOT`: the pairs to pre-register, from a pilot run's variance.

PILOT is a run directory (``episodes.jsonl``, with the run's frozen ``plan.json``
used as the plan), a published run (``<store URL>/runs/<id>``, pulled with
verification into a temporary directory) or an episode log (JSON lines). For each
cohort and contrast the paired-difference standard deviation of the metric is
estimated, and the smallest number of pairs at which the decision rule detects the
given saving with the given power is found by simulation (:mod:`pairlab.core.analysis.power`).
The value to pre-register is the largest over the cohorts that could be estimated.
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pairlab.adapters.interventions import load_intervention
from pairlab.cli.output import emit_json
from pairlab.core.analysis.study_plan import ResolvedPlan
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.intervention_manifest import InterventionIdentity
from pairlab.core.stats.skew_gate import MAX_CALIBRATED_PAIRS

if TYPE_CHECKING:
    from pairlab.core.analysis.power_study import PowerStudy


def _records_and_plan(
    source: str, plan: Path | None, work: Path
) -> tuple[list[Any], ResolvedPlan, str]:
    from pairlab.cli.aggregate import plan_for, read_episode_log

    path = Path(source)
    if path.is_dir():
        episodes = path / "episodes.jsonl"
        if not episodes.is_file():
            raise InvalidInputError(
                f"{path}: not a run directory (no episodes.jsonl)", reason=ReasonCode.NOT_FOUND
            )
        return read_episode_log(episodes), plan_for(plan, episodes), str(path)
    if path.is_file():
        return read_episode_log(path), plan_for(plan, path), str(path)
    if "/runs/" in source.rstrip("/") or source.startswith("s3://"):
        from pairlab.adapters.store import open_store
        from pairlab.adapters.store.runs import pull_run, split_run_url

        store_url, run_id = split_run_url(source)
        pulled = pull_run(open_store(store_url), run_id, work / run_id)
        episodes = pulled.dest / "episodes.jsonl"
        return read_episode_log(episodes), plan_for(plan, episodes), source
    raise InvalidInputError(
        f"{source}: no such run directory, episode log or <store>/runs/<id> URL",
        reason=ReasonCode.NOT_FOUND,
    )


def of_intervention(records: list[Any], identity: InterventionIdentity) -> list[Any]:
    """The pilot's records of ``identity`` (same id and manifest hash), and those that
    recorded no intervention (written before issue 26: their cohorts are keyed
    ``unknown``, never pooled with it). A pilot of other interventions only is refused."""
    kept = [
        r
        for r in records
        if r.intervention_id is None
        or (r.intervention_id, r.intervention_manifest_sha256)
        == (identity.id, identity.manifest_sha256)
    ]
    if records and not kept:
        found = sorted({f"{r.intervention_id} ({r.intervention_version})" for r in records})
        raise InvalidInputError(
            f"the pilot holds no episode of intervention '{identity.id}' "
            f"{identity.version} ({identity.manifest_sha256[:12]}); it holds {', '.join(found)}",
            reason=ReasonCode.INSUFFICIENT_PILOT,
        )
    return kept


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def register(app: typer.Typer) -> None:
    @app.command("power")
    def power_cmd(
        pilot: Annotated[
            str,
            typer.Argument(
                help="pilot run: a run directory, <store URL>/runs/<id>, or episodes.jsonl"
            ),
        ],
        effect: Annotated[
            str,
            typer.Option(
                "--effect",
                help="saving to detect: a percentage of the control mean (10%) or an absolute value",
            ),
        ] = "10%",
        power: Annotated[
            float, typer.Option("--power", min=0.5, max=0.99, help="target power")
        ] = 0.8,
        metric: Annotated[
            str | None, typer.Option("--metric", help="metric (default: the plan's primary metric)")
        ] = None,
        contrast: Annotated[
            list[str] | None,
            typer.Option(
                "--contrast",
                help="contrast, e.g. full-vs-baseline (repeatable; default: the plan's primary contrasts)",
            ),
        ] = None,
        alpha: Annotated[
            float | None, typer.Option("--alpha", help="alpha (default: the plan's)")
        ] = None,
        family_size: Annotated[
            int | None,
            typer.Option(
                "--family-size",
                min=1,
                help="tests sharing alpha (default: the plan's primary contrasts)",
            ),
        ] = None,
        model: Annotated[
            str,
            typer.Option("--model", help="normal (pilot sd) or empirical (the pilot's own shape)"),
        ] = "normal",
        plan: Annotated[
            Path | None,
            typer.Option(
                "--plan", help="study plan (default: the pilot's plan.json, else the default plan)"
            ),
        ] = None,
        min_pilot_pairs: Annotated[
            int,
            typer.Option(
                "--min-pilot-pairs", min=3, help="pilot pairs needed to estimate a cohort"
            ),
        ] = 5,
        max_pairs: Annotated[
            int, typer.Option("--max-pairs", min=10, help="largest n searched")
        ] = 2000,
        replicates: Annotated[
            int,
            typer.Option(
                "--replicates",
                min=200,
                help="simulated studies per candidate n (Monte-Carlo error of the power ~ 0.4/sqrt(R))",
            ),
        ] = 4000,
        intervention: Annotated[
            str,
            typer.Option(
                "--intervention",
                help="the pilot's episodes of this intervention (an id under interventions/ "
                "or a manifest's path); episodes that recorded none stay, as cohorts of "
                "intervention 'unknown'",
            ),
        ] = "reference",
        as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    ) -> None:
        """Pairs per cohort needed to detect a saving with a given power under the decision rule."""
        from pairlab.core.analysis.power import Effect
        from pairlab.core.analysis.power_study import PowerRequest, power_study

        try:
            wanted = Effect.parse(effect)
        except ValueError as exc:
            raise InvalidInputError(str(exc), reason=ReasonCode.INVALID_INPUT) from exc
        request = PowerRequest(
            effect=wanted,
            power=power,
            metric=metric,
            contrasts=contrast,
            alpha=alpha,
            family_size=family_size,
            model=model,
            min_pilot_pairs=min_pilot_pairs,
            max_pairs=max_pairs,
            replicates=replicates,
        )
        wired = load_intervention(intervention)  # a refused manifest: exit 2
        with tempfile.TemporaryDirectory(prefix="pairlab-power-") as tmp:
            records, resolved, source = _records_and_plan(pilot, plan, Path(tmp))
        records = of_intervention(records, wired.identity)
        show_progress = sys.stderr.isatty()  # the simulation takes seconds per cohort at large n
        study = power_study(
            records,
            resolved,
            request,
            source=source,
            progress=(lambda line: typer.echo(line, err=True)) if show_progress else None,
        )
        if as_json:
            emit_json(study.to_json())
        else:
            _print_study(study)
        if study.pre_register is None:
            raise typer.Exit(2)


def _print_study(study: PowerStudy) -> None:
    """The study as text: what was asked, a row per cohort, the notes, the answer."""
    request, resolved, pre = study.request, study.plan, study.pre_register
    typer.echo(
        f"pilot {study.source}: a saving of {str(request.effect).lstrip('-')} with power "
        f"{request.power:g}, alpha {study.alpha:g} over {study.family} primary test(s) "
        f"({study.alpha_per_test:.4g} one-sided per test), {request.model} model; "
        f"plan {resolved.plan.id!r} ({resolved.source})"
    )
    typer.echo("")
    typer.echo(
        "| cohort | contrast | metric | pilot pairs | sd | effect | pairs needed "
        "(sd 80% interval) | power | status |"
    )
    typer.echo("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in study.rows:
        k = r.key
        label = (
            f"{k['client']} {k['clientVersion']} / {k['model']} / {k['taskId']} / {k['stratum']}"
        )
        span = f"{_fmt(r.pairs_if_sd_low)}-{_fmt(r.pairs_if_sd_high)}"
        typer.echo(
            f"| {label} | {r.contrast} | {r.metric} | {r.pilot_pairs} | {_fmt(r.sd)} | "
            f"{_fmt(r.effect)} | {_fmt(r.required_pairs)} ({span}) | "
            f"{_fmt(r.power_at_required, 3)} | {r.status} |"
        )
    typer.echo("")
    for need in study.shape:
        pairs = (
            f"{need.pairs_needed} pairs"
            if need.pairs_needed is not None
            else f"more than {MAX_CALIBRATED_PAIRS} pairs (beyond the calibration)"
        )
        typer.echo(
            f"shape: {need.contrast} {need.metric}: mean skewness {need.mean_skewness:.2f} over "
            f"{need.cohorts} cohorts; the decision interval is calibrated for it from {pairs} "
            "per cohort"
        )
    for note in study.notes:
        typer.echo(f"note: {note}")
    if pre is None:
        typer.echo(
            "no cohort could be estimated: run a larger pilot (at least "
            f"{request.min_pilot_pairs} pairs per cohort)"
        )
    else:
        typer.echo(
            f"pre-register: {pre} pairs per cohort (repetitions >= {pre}): "
            f"TOKEN_OPTIMIZER_EVAL_MIN_PAIRS={pre}, or `min_pairs: {pre}` in "
            "catalog/suites/<suite>.plan.yaml"
        )
        alone = study.pre_register_one_cohort
        typer.echo(
            "one cohort per contrast and metric (one task, client and model: its shape cannot "
            "be judged, decided as if lognormal sigma 1): "
            + (f"{alone} pairs" if alone is not None else f"more than {request.max_pairs} pairs")
        )
