"""`pairlab eval`, `pairlab demo` and `pairlab serve`: the orchestration entry points.

The flow runs in this process on Prefect's embedded defaults (no server needed);
with PREFECT_API_URL set, runs are recorded on that server instead.
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import typer

from pairlab.cli.model_options import command_with, field_option, plain_option
from pairlab.cli.output import emit_json
from pairlab.core.errors import EnvironmentUnavailable, ReasonCode, RunStopped

P = TypeVar("P")
SUMMARY_KEYS = (
    "run_id",
    "store",
    "episodes",
    "failed",
    "exploratory",
    "all_below_gate",
    "report",
    "report_html",
)


def _quiet_prefect(console_level: str = "WARNING") -> None:
    """Prefect's own chatter stays off the console; a run's progress lines (the flow-
    and task-run loggers at INFO) still go to the server, i.e. the run's Logs tab."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_LOGGING_LOGGERS_PREFECT_FLOW_RUNS_LEVEL", "INFO")
    # task runs: only their warnings (five task runs an episode would drown the run's lines)
    os.environ.setdefault("PREFECT_LOGGING_LOGGERS_PREFECT_TASK_RUNS_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", console_level)
    os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
    os.environ.setdefault("PREFECT_LOGGING_LOG_PRINTS", "false")
    # The embedded (ephemeral) server can take a while on a loaded 2-core machine.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


def _prepare_docker_images(profile: Any) -> None:
    """Engine reachable and the episode image built (first use) before the flow starts, so
    a missing engine or build prerequisite is one line and exit 3, never a flow traceback;
    the flow then finds the images ready (``ensure_image`` remembers them)."""
    from pairlab.adapters.clients.registry import REAL_CLIS
    from pairlab.adapters.docker_engine import connect
    from pairlab.adapters.images.build import ensure_image

    connect().close()
    if profile.client in REAL_CLIS:
        from pairlab.adapters.run.provider import ensure_client_image

        ensure_client_image(profile)
    else:
        ensure_image(profile.image)


def _account_profile(params: Any) -> Any:
    """With ``--account`` and the default profile, the profile of the account's client (an
    unknown account: exit 2 with the known names; a credential missing: exit 3)."""
    from pairlab.adapters.accounts.selection import load_account

    record, _ = load_account(params.account)
    if params.profile == type(params).model_fields["profile"].default:
        return params.model_copy(update={"profile": record.client})
    return params


def _run_eval(params: Any, *, show_progress: bool, as_json: bool = False) -> dict[str, Any]:
    from pairlab.adapters.episode.io import load_eval_inputs
    from pairlab.core.accounts import refuse_credential_parameters
    from pairlab.core.intervention_wiring import planned_arms, require_arms

    # a pasted credential, an unknown account, profile, intervention or arm: exit 2,
    # before any flow
    refuse_credential_parameters(params.model_dump(mode="json"))
    if params.account is not None:
        params = _account_profile(params)
        from flows.evidence.budget_ceilings import check_account_budget

        check_account_budget(params)  # a window ceiling on an API key, overlapping pairs
    _, profile = load_eval_inputs(params.suite, params.profile, params.intervention)
    # no --arms: the baseline and every arm the intervention supports (a third-party server
    # without a retrieval layer runs baseline and optimizer, not a refusal); the flow
    # resolves the default itself, with the same function, and freezes it
    require_arms(profile, planned_arms(params.arms, profile.arm_args))
    if params.backend == "docker" and params.dispatch.mode == "in-process":
        _prepare_docker_images(profile)
    _quiet_prefect()
    from pairlab.adapters.run import progress_events

    if not show_progress:
        from flows.evidence_eval import evidence_eval

        return _eval_result(evidence_eval(params, return_state=True), as_json)

    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (
        TextColumn("[bold]episodes"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn(
            "done {task.fields[done]} · failed {task.fields[failed]} · remaining {task.fields[remaining]}"
        ),
        TimeRemainingColumn(),
    )
    with Progress(*columns, transient=False, redirect_stderr=False) as bar:
        task_id = bar.add_task("episodes", total=None, done=0, failed=0, remaining="?")

        def listener(p: progress_events.Progress) -> None:
            bar.update(
                task_id,
                total=p.total,
                completed=p.done + p.skipped,
                done=p.done,
                failed=p.failed,
                remaining=p.remaining,
            )

        progress_events.add_listener(listener)
        try:
            from flows.evidence_eval import evidence_eval

            state = evidence_eval(params, return_state=True)
        finally:
            progress_events.remove_listener(listener)
    return _eval_result(state, as_json)


def _eval_result(state: Any, as_json: bool) -> dict[str, Any]:
    """The flow's result; a run stopped at its budget ceiling (its Cancelled state says
    ``budget-exhausted``) prints what it did, then is :class:`RunStopped` (exit 4)."""
    from flows.run_ui import budget_stop_message
    from pairlab.core.budget import budget_stop_words

    if not state.is_cancelled():
        return cast("dict[str, Any]", state.result())  # a failed run raises its error
    result = state.result(raise_on_failure=False)
    if not (isinstance(result, dict) and result.get("budget_exhausted")):
        return cast("dict[str, Any]", state.result())  # interrupted: CancelledRun, as before
    budget = result["budget"]
    if not as_json:
        _print_result(result, as_json=False)
    raise RunStopped(
        f"{budget_stop_message(result['run_id'])}: {budget_stop_words(budget)}; the partial "
        "report is published",
        details={k: result[k] for k in (*SUMMARY_KEYS, "budget") if k in result},
    )


def _require_prefect_server(api_url: str) -> None:
    """Fail fast (exit 3) when the server at ``api_url`` does not answer its health check."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        problem = client.api_healthcheck()
    if problem is not None:
        raise EnvironmentUnavailable(
            f"the Prefect server at {api_url} is not reachable ({problem}); start it with "
            "`uv run prefect server start` or fix PREFECT_API_URL",
            reason=ReasonCode.PREFECT_UNAVAILABLE,
        ) from problem


def _print_result(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json({k: result[k] for k in SUMMARY_KEYS if k in result})
        return
    typer.echo(
        f"run {result['run_id']}: {result['episodes']} episodes ({result['failed']} failed or incorrect)"
    )
    if result.get("exploratory"):
        typer.echo(
            "EXPLORATORY: the gate is below the study plan's minimum pairs; "
            "effects with fewer pairs are not wins"
        )
    if result.get("all_below_gate"):
        typer.echo(
            "NO DECISION: every cohort has fewer complete pairs than the gate; "
            "run more repetitions (pairlab power says how many)"
        )
    typer.echo(f"report: {result['report']}")
    if result.get("report_html"):
        typer.echo(f"html:   {result['report_html']}")
    typer.echo(f"store:  {result['store']}")


def _params(factory: type[P], /, **values: Any) -> P:
    """Flow parameters from options; a refused combination is invalid input (exit 2)."""
    from pydantic import ValidationError

    from pairlab.core.errors import InvalidInputError

    try:
        return factory(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "parameters"
        raise InvalidInputError(
            f"{where}: {first['msg']}", reason=ReasonCode.INVALID_INPUT
        ) from exc


def _assertion(value: str) -> bool | None:
    """``unknown|no|yes`` -> None/False/True; anything else is invalid input (exit 2)."""
    from pairlab.core.errors import InvalidInputError

    choices: dict[str, bool | None] = {"unknown": None, "no": False, "yes": True}
    if value not in choices:
        raise InvalidInputError(
            f"--unrelated-concurrent-use must be unknown, no or yes (got {value!r})",
            reason=ReasonCode.INVALID_INPUT,
        )
    return choices[value]


DEMO_PROFILE = "claude"


def _demo_client(profile: str) -> str:
    from pairlab.adapters.profiles import load_named_profile

    loaded = load_named_profile(profile)
    if loaded.endpoint == "emulator":
        return f"the real {loaded.client} {loaded.version or ''} against the provider emulator"
    if loaded.certification.level == "simulator":
        return "the simulated client"
    return f"{loaded.client}"


def _eval_options() -> list[inspect.Parameter]:
    """``pairlab eval``'s options, in help order: each flow parameter's default, help and
    bounds from :class:`flows.params.EvidenceEvalParams` (and the nested models it holds);
    the names and shapes of the command line (``--task``, ``--arms a,b``, ``--plan``, ...)
    stay the command's."""
    from flows.params import EvidenceEvalParams as E
    from flows.params import WarmStratumParams
    from pairlab.core.emulator.run_settings import EmulatorSettings

    use = "unknown (default: quota consumption stays null), no, yes"
    return [
        *[
            field_option(E, name)
            for name in ("suite", "profile", "intervention", "repetitions", "backend", "store")
        ],
        field_option(
            E,
            "task_filter",
            param="task",
            flags=["--task"],
            kind=list[str] | None,
            default=None,
            help="Only these task ids (repeatable; default: every task)",
        ),
        field_option(
            E,
            "arms",
            kind=str,
            default="",
            help="Comma-separated arms; baseline is required (default: the baseline and "
            "every arm the intervention supports)",
        ),
        *[
            field_option(E, name)
            for name in (
                "model",
                "account",
                "budget_tokens",
                "budget_window_percent",
                "seed",
                "concurrency",
                "min_pairs",
                "run_id",
            )
        ],
        field_option(E, "study_plan", param="plan", flags=["--plan"]),
        *[field_option(E, name) for name in ("include_transcript", "keep_workspaces")],
        *[field_option(E, name) for name in ("on_secret", "work_dir")],
        field_option(
            E,
            "unrelated_concurrent_use",
            param="concurrent_use",
            flags=["--unrelated-concurrent-use"],
            kind=str,
            default="unknown",
            help=f"Real accounts: did anything else use the account during the run? {use}",
        ),
        *[
            field_option(E, n)
            for n in ("quota_interval_episodes", "quota_interval_s", "holdout_share")
        ],
        field_option(
            WarmStratumParams,
            "harvest_task",
            param="warm_harvest_task",
            flags=["--warm-harvest-task"],
            kind=str | None,
            default=None,
            help=f"{E.model_fields['warm'].description}: this suite task's full-arm "
            "session harvests the findings carried into it (docs/findings.md)",
        ),
        field_option(
            EmulatorSettings,
            "faults",
            param="emulator_fault",
            flags=["--emulator-fault"],
            kind=list[str] | None,
            default=None,
            hidden=True,
            help="Advanced (emulator profiles): inject a fault, "
            "KIND@REQUEST[:TASK[:ARM[:REPETITION]]], repeatable",
        ),
        field_option(
            EmulatorSettings,
            "wrong_probability",
            param="emulator_wrong_probability",
            kind=float | None,
            default=None,
            hidden=True,
        ),
        plain_option("as_json", bool, False, "--json", help="Print a JSON summary"),
    ]


def _eval(
    *,
    arms: str,
    task: list[str] | None,
    plan: str | None,
    concurrent_use: str,
    warm_harvest_task: str | None,
    emulator_fault: list[str] | None,
    emulator_wrong_probability: float | None,
    as_json: bool,
    **fields: Any,
) -> None:
    """Run the evidence-eval flow on the embedded defaults (no server needed)."""
    from flows.params import EvidenceEvalParams
    from pairlab.core.emulator.run_settings import EmulatorSettings, parse_fault_rule

    emulator: dict[str, Any] = {"faults": [parse_fault_rule(f) for f in emulator_fault or []]}
    if emulator_wrong_probability is not None:
        emulator["wrong_probability"] = emulator_wrong_probability
    params = _params(
        EvidenceEvalParams,
        **fields,
        task_filter=task or [],
        **({"arms": [a.strip() for a in arms.split(",") if a.strip()]} if arms.strip() else {}),
        study_plan=plan,
        unrelated_concurrent_use=_assertion(concurrent_use),
        warm=None if warm_harvest_task is None else {"harvest_task": warm_harvest_task},
        emulator=_params(EmulatorSettings, **emulator),
    )
    result = _run_eval(params, show_progress=not as_json and sys.stderr.isatty(), as_json=as_json)
    _print_result(result, as_json)


def register(app: typer.Typer) -> None:
    app.command("eval")(command_with(_eval, _eval_options(), _eval.__doc__ or ""))

    @app.command("demo")
    def demo_cmd(
        store: Annotated[str, typer.Option(help="Where the report goes")] = "pairlab-store",
        repetitions: Annotated[int, typer.Option(min=1)] = 5,
        backend: Annotated[str, typer.Option(help="local or docker")] = "local",
        profile: Annotated[
            str,
            typer.Option(
                help="claude or codex (the real CLI against the provider emulator), "
                "sim (the simulated client)"
            ),
        ] = DEMO_PROFILE,
        intervention: Annotated[
            str,
            typer.Option(help="What the treated arms run: an id under interventions/ or a path"),
        ] = "reference",
        as_json: Annotated[bool, typer.Option("--json")] = False,
    ) -> None:
        """The README main job: a complete 4-arm evaluation of the core suite with the real
        Claude Code against the provider emulator (``--profile sim``: the simulator)."""
        from flows.params import EvidenceEvalParams

        params = _params(
            EvidenceEvalParams,
            profile=profile,
            intervention=intervention,
            repetitions=repetitions,
            store=store,
            backend=backend,
            concurrency=2,
        )
        if not as_json:
            typer.echo(
                f"pairlab demo: suite 'core' × 4 arms × {repetitions} repetitions with "
                f"{_demo_client(profile)} ({backend} backend)"
            )
        result = _run_eval(params, show_progress=not as_json, as_json=as_json)
        _print_result(result, as_json)
        if not as_json:
            report = Path(result.get("report_html") or result["report"])
            typer.echo("")
            typer.echo(f"Open the report: {report}")

    @app.command("serve")
    def serve_cmd(
        limit: Annotated[int, typer.Option(help="Flow runs at the same time")] = 4,
        verbose: Annotated[
            bool,
            typer.Option(
                "--verbose", help="Also print the runs' progress lines (always in the Logs tab)"
            ),
        ] = False,
    ) -> None:
        """Serve the deployments (evidence-eval, certify-clients, ...) to PREFECT_API_URL.

        SIGINT/SIGTERM stop it within seconds; a canary waiting for approval stays
        paused on the server and a later `pairlab serve` runs it once approved."""
        _quiet_prefect("INFO" if verbose else "WARNING")
        # The runner notices a stop (SIGINT/SIGTERM) and new runs at its next poll: poll
        # often, so `pairlab serve` exits within seconds and picks up resumed runs quickly.
        os.environ.setdefault("PREFECT_RUNNER_POLL_FREQUENCY", "2")
        if not os.environ.get("PREFECT_API_URL"):
            raise EnvironmentUnavailable(
                "PREFECT_API_URL is not set: start a server (`uv run prefect server start`) and export "
                "PREFECT_API_URL=http://127.0.0.1:4200/api",
                reason=ReasonCode.PREFECT_UNAVAILABLE,
            )
        _require_prefect_server(os.environ["PREFECT_API_URL"])
        from flows.deployments import serve_all

        serve_all(limit=limit)

    @app.command("forms")
    def forms_cmd() -> None:
        """Give deployments registered by `prefect deploy` (infra/prefect.yaml: work pools,
        the team stack) the run forms `pairlab serve` gives its own (choices, bounds refused
        beside the field, tri-state concurrent use); run after `prefect deploy`."""
        _quiet_prefect("WARNING")
        api_url = os.environ.get("PREFECT_API_URL")
        if not api_url:
            raise EnvironmentUnavailable(
                "PREFECT_API_URL is not set", reason=ReasonCode.PREFECT_UNAVAILABLE
            )
        _require_prefect_server(api_url)
        from flows.deployments import polish_deployed_forms

        for name in polish_deployed_forms():
            typer.echo(f"form updated: {name}")
