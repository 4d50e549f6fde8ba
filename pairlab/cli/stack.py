"""`pairlab stack up|down|status`: the team stack of infra/compose.yaml on this machine.

``up`` builds the images that are missing or stale (``pairlab images build``), starts
PostgreSQL, the Prefect server, a 3-node Garage (its layout, key and bucket applied by a
one-shot service), the deployments and the workers, waits for every health check and
prints the UI and S3 endpoints and where the credentials are. ``down`` keeps the volumes
unless ``--volumes``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from pairlab.cli.output import emit_json

if TYPE_CHECKING:
    from pairlab.adapters.stack import ServiceState, StackSettings


def register(app: typer.Typer) -> None:
    stack = typer.Typer(
        help="Bring the team stack (Prefect on PostgreSQL, Garage, workers) up or down.",
        no_args_is_help=True,
    )
    app.add_typer(stack, name="stack")

    @stack.command("up")
    def up_cmd(
        workers: Annotated[int, typer.Option(min=1, help="Worker containers")] = 2,
        build: Annotated[
            bool, typer.Option("--build/--no-build", help="Build missing or stale images first")
        ] = True,
        timeout: Annotated[float, typer.Option(help="Seconds to wait for the health checks")] = 600,
        as_json: Annotated[bool, typer.Option("--json")] = False,
    ) -> None:
        """Build what is missing, start the stack, wait until every service is healthy."""
        from pairlab.adapters.stack import StackSettings, endpoints, stack_up

        settings = StackSettings.from_env(workers=workers)
        states = stack_up(settings, build=build, timeout_s=timeout)
        _print(settings, states, endpoints(settings), as_json)

    @stack.command("status")
    def status_cmd(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
        """Services, their health, the endpoints (exit 1 when a service is not ready)."""
        from pairlab.adapters.stack import StackSettings, endpoints, service_states

        settings = StackSettings.from_env()
        states = service_states(settings)
        if not states and not as_json:
            typer.echo(f"stack {settings.project}: no containers (`pairlab stack up` starts it)")
        _print(settings, states, endpoints(settings), as_json)
        if not states or not all(s.ready for s in states):
            raise typer.Exit(1)

    @stack.command("down")
    def down_cmd(
        volumes: Annotated[
            bool,
            typer.Option("--volumes", help="Also remove the data volumes (PostgreSQL, Garage)"),
        ] = False,
    ) -> None:
        """Stop and remove the stack's containers; the volumes stay unless --volumes."""
        from pairlab.adapters.stack import StackSettings, stack_down

        settings = StackSettings.from_env()
        stack_down(settings, volumes=volumes)
        typer.echo(
            f"stack {settings.project} is down"
            + ("; volumes removed" if volumes else "; volumes kept (--volumes removes them)")
        )


def _print(
    settings: StackSettings, states: list[ServiceState], ends: dict[str, str], as_json: bool
) -> None:
    if as_json:
        emit_json({"services": [s.to_json() for s in states], "endpoints": ends})
        return
    for s in states:
        state = "ready" if s.ready else "not ready"
        detail = s.health or (f"exit {s.exit_code}" if s.exit_code is not None else s.status)
        typer.echo(f"{s.service:<15} {s.container:<32} {detail:<10} {state}")
    typer.echo(f"Prefect UI:   {ends['ui']}   (API {ends['api']})")
    typer.echo(f"S3 (Garage):  {ends['s3']}   bucket {ends['bucket']}")
    typer.echo(f"Credentials:  {ends['credentials']} (set -a; . that file; set +a)")
