"""The deployments served by `pairlab serve` (one place; infra/ holds the file form).

Defaults describe a small evaluation with the simulator that finishes in a couple
of minutes, so a fresh install can trigger one from the UI as is.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, get_args, get_type_hints

from pydantic import BaseModel, ValidationError

from flows import audit_savings, certify_clients, compare_artifact
from flows.canary import trial as canary_trial
from flows.evidence_eval import evidence_eval
from flows.form_schema import Choices, drop_none, polish_schema, with_form_defaults
from flows.params import EvidenceEvalParams
from pairlab.core.errors import InvalidInputError

SMALL_EVAL = EvidenceEvalParams(
    task_filter=["fix-median", "answer-cache-env"], repetitions=5, concurrency=2
)


def form_choices() -> Choices:
    """The suites, runner profiles, interventions and task ids the forms offer (read at
    deploy time)."""
    from pairlab.adapters.clients.registry import REAL_CLIS
    from pairlab.adapters.interventions import shipped_intervention_ids
    from pairlab.adapters.paths import catalog_dir
    from pairlab.adapters.profiles import scan_profiles
    from pairlab.core.schemas.catalog import load_suite

    suites = sorted(p.stem for p in (catalog_dir() / "suites").glob("*.yaml"))
    tasks: dict[str, None] = {}
    for suite in suites:
        for entry in load_suite(catalog_dir(), suite).tasks:
            tasks[entry.id] = None
    loaded = [p for p in scan_profiles() if p.profile is not None]
    real_cli_readers = {cli.usage_reader for cli in REAL_CLIS.values()}
    return Choices(
        suites=suites,
        profiles=[p.name for p in loaded],
        tasks=sorted(tasks),
        interventions=shipped_intervention_ids(),
        # canary arms differ by a simulator revision (no emulator endpoint), and loom's
        # artifact names a real CLI's usage only (claude or codex)
        profiles_by_model={
            "CanaryTrialParams": [
                p.name
                for p in loaded
                if p.profile is not None
                and p.profile.endpoint is None
                and p.profile.usage.reader in real_cli_readers
            ]
        },
    )


def for_people(deployment: Any, choices: Choices) -> Any:
    """The deployment's run form with typed choices, units and no None noise
    (flows/form_schema.py); ``None`` parameter defaults are left out. The server enforces
    the form's schema before it stores a run (a credential in a field is refused there)."""
    deployment.enforce_parameter_schema = True
    schema = deployment._parameter_openapi_schema
    polished = polish_schema(schema.model_dump(), choices)
    deployment._parameter_openapi_schema = type(schema).model_validate(polished)
    deployment.parameters = with_form_defaults(polished, drop_none(deployment.parameters))
    return deployment


def form_flows() -> dict[str, Any]:
    """The flows whose deployments get the form, by flow name."""
    flows: list[Any] = [
        evidence_eval,
        canary_trial.canary_trial,
        certify_clients.certify_clients,
        compare_artifact.compare_artifact,
        audit_savings.audit_savings,
    ]
    return {f.name: f for f in flows}


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model of a flow parameter annotated ``Model`` or ``Model | None``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    models = [a for a in get_args(annotation) if a is not type(None)]
    if len(models) == 1 and isinstance(models[0], type) and issubclass(models[0], BaseModel):
        return models[0]
    return None


def complete_parameters(flow: Any, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """A deployment's parameters with every field of each model parameter filled in.

    The run form sends its values as the whole parameter and its schema requires every
    field that is not nullable (flows/form_schema.py), while Prefect's form starts from the
    deployment's parameters only: a field they leave out (infra/prefect.yaml gives
    evidence-eval six) shows its schema default but is sent as missing, and the form refuses
    it ("'suite' is a required property") far above Submit, which then seems to do nothing.
    So the given values are validated into the flow's model and dumped whole (the model's
    defaults for the rest, as `pairlab serve`'s deployments carry); a model parameter left
    out or given empty is the model's defaults when it has one for every field (else left
    as it is). Parameters that are not models are left as they are. Invalid given values are refused (invalid-input), never
    passed on to a form that cannot submit them."""
    hints = get_type_hints(flow.fn)
    out = dict(parameters)
    for name in inspect.signature(flow.fn).parameters:
        model = _model_of(hints.get(name))
        given = out.get(name)
        if model is None or not isinstance(given, dict | None):
            continue
        try:
            value = model.model_validate(given or {})
        except ValidationError as exc:
            if not given:
                # required fields without defaults: the operator fills them in (`pairlab
                # serve` registers compare-artifact and audit-savings with {})
                continue
            raise InvalidInputError(
                f"deployment parameter {name!r} of flow {flow.name!r} is invalid: "
                f"{exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}"
            ) from exc
        out[name] = value.model_dump(mode="json")
    return out


def polish_deployed_forms() -> list[str]:
    """Give the deployments `prefect deploy` registered (infra/prefect.yaml: work pools, the
    team stack) the form `pairlab serve` gives its own: `prefect deploy` writes the flow's
    raw schema. The form is built from this checkout's flow (never re-polished from the
    server's copy), so running it twice changes nothing. The server is told to enforce it
    (``enforce_parameter_schema``): a run whose parameters the form refuses, a credential
    pasted into a field among them, is never created nor stored (flows/form_schema.py).
    Returns ``flow/deployment`` names."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import DeploymentUpdate
    from prefect.utilities.callables import parameter_schema

    choices, flows = form_choices(), form_flows()
    updated = []
    with get_client(sync_client=True) as client:
        for deployment in client.read_deployments():
            flow_name = client.read_flow(deployment.flow_id).name
            if flow_name not in flows:
                continue
            schema = polish_schema(parameter_schema(flows[flow_name]).model_dump(), choices)
            complete = complete_parameters(flows[flow_name], deployment.parameters)
            parameters = with_form_defaults(schema, drop_none(complete))
            client.update_deployment(
                deployment.id,
                DeploymentUpdate(
                    parameter_openapi_schema=schema,
                    parameters=parameters,
                    enforce_parameter_schema=True,
                ),
            )
            updated.append(f"{flow_name}/{deployment.name}")
    return sorted(updated)


def build_deployments() -> list[Any]:
    choices = form_choices()
    return [for_people(d, choices) for d in _deployments()]


def _deployments() -> list[Any]:
    deployments = [
        by_module_path(
            evidence_eval.to_deployment(
                name="evidence-eval",
                parameters={"params": SMALL_EVAL.model_dump(mode="json")},
                description="Paired 4-arm evidence evaluation (small simulator run by default).",
                tags=["pairlab"],
            ),
            evidence_eval,
        ),
    ]
    for module, flow_obj in (
        (certify_clients, certify_clients.certify_clients),
        (compare_artifact, compare_artifact.compare_artifact),
        (audit_savings, audit_savings.audit_savings),
        (canary_trial, canary_trial.canary_trial),
    ):
        deployments.append(by_module_path(module.deployment(), flow_obj))
    return deployments


def by_module_path(deployment: Any, flow_obj: Any) -> Any:
    """Point a deployment at ``package.module.flow`` instead of a file path relative to the cwd.

    ``to_deployment`` records ``../../work/main/flows/x.py:flow`` relative to the
    directory `pairlab serve` was started in; the module path of the installed
    package resolves from any directory, for this process and for workers.
    """
    fn = flow_obj.fn
    # No ':' in the entrypoint = a module path for prefect's load_flow_from_entrypoint.
    deployment.entrypoint = f"{fn.__module__}.{fn.__name__}"
    return deployment


STOP_GRACE_S = 8.0


def keep_paused_runs(runner: Any) -> None:
    """On stop the runner cancels every flow run it still tracks. A run suspended for input
    (a canary awaiting approval) may still be tracked while its process exits: leave it
    Paused on the server, for a later `pairlab serve` once it is resumed."""
    manager = runner._cancellation_manager
    cancel = manager.cancel

    async def cancel_unless_paused(flow_run: Any, *args: Any, **kwargs: Any) -> None:
        if flow_run.state is not None and flow_run.state.is_paused():
            return
        await cancel(flow_run, *args, **kwargs)

    manager.cancel = cancel_unless_paused


def serve_all(limit: int = 4) -> None:
    """Serve every deployment until SIGINT or SIGTERM.

    Either signal asks the runner to stop (it cancels the flow runs it is executing
    and stops polling); a run suspended for approval (a canary) holds no process and
    stays Paused on the server, for a later `pairlab serve` once resumed. Prefect's
    own serve ignores SIGINT while it polls; here both signals stop it, and a second
    signal, or a runner still busy after ``STOP_GRACE_S`` seconds, ends the process.
    """
    import asyncio
    import contextlib
    import os
    import signal
    import sys
    import threading

    from prefect.runner import Runner

    # pause_on_shutdown off: pausing every deployment on the way out costs API calls (seconds
    # on a loaded machine) and the next `pairlab serve` re-registers them active anyway
    runner = Runner(limit=limit, pause_on_shutdown=False)
    deployments = build_deployments()
    for deployment in deployments:
        runner.add_deployment(deployment)
    stopping = threading.Event()

    def force_exit() -> None:
        print("pairlab serve: the runner did not stop in time; exiting", file=sys.stderr)
        os._exit(1)

    def on_signal(signum: int, _frame: object) -> None:
        if stopping.is_set():
            force_exit()
        stopping.set()
        print(f"pairlab serve: {signal.Signals(signum).name}, stopping", file=sys.stderr)
        timer = threading.Timer(STOP_GRACE_S, force_exit)
        timer.daemon = True
        timer.start()
        if runner.started and runner._loop is not None:
            keep_paused_runs(runner)
            runner.stopping = True
            runner.execute_in_background(runner.astop)
        else:
            raise SystemExit(0)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    runner.handle_sigterm = on_signal  # type: ignore[method-assign]  # Runner.start installs it
    names = ", ".join(f"{d.flow_name}/{d.name}" for d in deployments)
    print(f"pairlab serve: serving {names}; stop with Ctrl-C or SIGTERM", file=sys.stderr)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(runner.start())
