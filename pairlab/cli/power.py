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
from typing import Annotated, Any

import typer

from pairlab.cli.output import emit_json
from pairlab.core.analysis.metrics import METRICS
from pairlab.core.analysis.study_plan import ResolvedPlan
from pairlab.core.errors import InvalidInputError, ReasonCode


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
        as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    ) -> None:
        """Pairs per cohort needed to detect a saving with a given power under the decision rule."""
        from pairlab.core.analysis.cohorts import paired_samples
        from pairlab.core.analysis.power import Effect, PowerSimulator, plan_cohort

        if model not in ("normal", "empirical"):
            raise InvalidInputError(
                f"--model {model!r}: normal or empirical", reason=ReasonCode.INVALID_INPUT
            )
        try:
            wanted = Effect.parse(effect)
        except ValueError as exc:
            raise InvalidInputError(str(exc), reason=ReasonCode.INVALID_INPUT) from exc
        with tempfile.TemporaryDirectory(prefix="pairlab-power-") as tmp:
            records, resolved, source = _records_and_plan(pilot, plan, Path(tmp))
        study = resolved.plan
        contrasts = contrast or list(study.primary_contrasts)
        level = study.alpha if alpha is None else alpha
        if not 0 < level <= 0.2:
            raise InvalidInputError(
                f"--alpha {level}: must be in (0, 0.2]", reason=ReasonCode.INVALID_INPUT
            )
        family = family_size or len(study.primary_contrasts)
        per_test = level / 2.0 / family  # one-sided, Holm's first step
        notes = []
        metrics = {
            c: metric or study.primary_metric_of(c) or study.primary_metric for c in contrasts
        }
        for c, m in metrics.items():
            if m not in METRICS:
                raise InvalidInputError(f"unknown metric {m!r}", reason=ReasonCode.INVALID_INPUT)
            if study.primary_metric_of(c) != m:
                notes.append(
                    f"{c} {m} is not a primary test of plan {study.id!r}: powered at alpha/{family} "
                    "(use --family-size for the secondary family's size)"
                )
        simulator = PowerSimulator(
            alpha_one_sided=per_test,
            model=model,  # type: ignore[arg-type]
            replicates=replicates,
        )
        rows = []
        show_progress = sys.stderr.isatty()
        for m in sorted(set(metrics.values())):
            for sample in paired_samples(records, m):
                label = sample.contrast.label
                if metrics.get(label) != m:
                    continue
                if show_progress:  # the simulation takes seconds per cohort at large n
                    typer.echo(f"simulating {sample.key['taskId']} {label} {m} ...", err=True)
                rows.append(
                    plan_cohort(
                        simulator,
                        key=sample.key,
                        contrast=label,
                        metric=m,
                        diffs=sample.diffs,
                        control=sample.control,
                        excluded_null=sample.excluded_null,
                        effect=wanted,
                        power=power,
                        min_pilot_pairs=min_pilot_pairs,
                        max_pairs=max_pairs,
                    )
                )
        ok = [r for r in rows if r.status == "ok" and r.required_pairs is not None]
        if not rows:
            raise InvalidInputError(
                f"{source}: no cohort has the contrasts {', '.join(contrasts)}",
                reason=ReasonCode.INSUFFICIENT_PILOT,
            )
        pre = max((r.required_pairs or 0) for r in ok) if ok else None
        payload = {
            "source": source,
            "plan": {"id": study.id, "source": resolved.source, "sha256": resolved.sha256},
            "effect": str(wanted),
            "power": power,
            "alpha": level,
            "familySize": family,
            "alphaPerTest": per_test,
            "model": model,
            "replicates": replicates,
            "decisionRule": "studentized-hybrid (Student t and bootstrap-t hull), Holm's first step",
            "cohorts": [r.to_json() for r in rows],
            "preRegister": None
            if pre is None
            else {
                "minPairs": pre,
                "env": f"TOKEN_OPTIMIZER_EVAL_MIN_PAIRS={pre}",
                "plan": f"min_pairs: {pre}",
                "repetitions": pre,
            },
            "notes": notes,
        }
        if as_json:
            emit_json(payload)
        else:
            typer.echo(
                f"pilot {source}: a saving of {str(wanted).lstrip('-')} with power {power:g}, alpha {level:g} over "
                f"{family} primary test(s) ({per_test:.4g} one-sided per test), {model} model; "
                f"plan {study.id!r} ({resolved.source})"
            )
            typer.echo("")
            typer.echo(
                "| cohort | contrast | metric | pilot pairs | sd | effect | pairs needed "
                "(sd 80% interval) | power | status |"
            )
            typer.echo("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
            for r in rows:
                k = r.key
                label = f"{k['client']} {k['clientVersion']} / {k['model']} / {k['taskId']} / {k['stratum']}"
                span = f"{_fmt(r.pairs_if_sd_low)}-{_fmt(r.pairs_if_sd_high)}"
                typer.echo(
                    f"| {label} | {r.contrast} | {r.metric} | {r.pilot_pairs} | {_fmt(r.sd)} | "
                    f"{_fmt(r.effect)} | {_fmt(r.required_pairs)} ({span}) | "
                    f"{_fmt(r.power_at_required, 3)} | {r.status} |"
                )
            typer.echo("")
            for note in notes:
                typer.echo(f"note: {note}")
            if pre is None:
                typer.echo(
                    "no cohort could be estimated: run a larger pilot (at least "
                    f"{min_pilot_pairs} pairs per cohort)"
                )
            else:
                typer.echo(
                    f"pre-register: {pre} pairs per cohort (repetitions >= {pre}): "
                    f"TOKEN_OPTIMIZER_EVAL_MIN_PAIRS={pre}, or `min_pairs: {pre}` in "
                    "catalog/suites/<suite>.plan.yaml"
                )
        if pre is None:
            raise typer.Exit(2)
