"""``pairlab episode run``: one episode by hand (prepare -> run -> collect -> grade -> cleanup).

Prints the outcome: exit code, timeout/OOM/crash, latency, the collected files
with their SHA-256 and the grader checks. Exit 0 when every grader check passed,
1 when the agent failed a check (or crashed/timed out), 2/3 for invalid input or
an unavailable environment (the usual mapping).
"""

from __future__ import annotations

import secrets
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pairlab.cli.output import emit_json

if TYPE_CHECKING:
    from pairlab.adapters.backends.base import CollectedFiles

episode_app = typer.Typer(help="Run single episodes.", no_args_is_help=True)


def _delivered_tokens(collected: CollectedFiles, out_dir: Path) -> tuple[int | None, str | None]:
    """Tokens the optimizer delivered, from the episode's MCP ledger rows (None when none).

    Returns ``(tokens, error)``: a ledger that cannot be read is reported, and the
    measurement stays None (never 0).
    """
    from pairlab.adapters.episode.io import ingest_ledger
    from pairlab.core.errors import PairlabError

    try:
        totals = ingest_ledger(collected, out_dir)
    except PairlabError as exc:
        return None, exc.message
    value = totals.get("observed_returned_tokens") if totals else None
    return (value if isinstance(value, int) else None), None


def run_one_episode(
    *,
    profile_name: str,
    task_id: str,
    arm: str,
    backend_name: str,
    suite_id: str,
    keep: bool,
    out_dir: Path | None,
    model: str | None,
    seed: int,
    timeout_s: float | None,
    account_dir: Path | None,
) -> dict[str, Any]:
    from pairlab.adapters.backends import make_backend
    from pairlab.adapters.episode.build import episode_spec
    from pairlab.adapters.episode.grading import grade
    from pairlab.adapters.episode.io import extract_final_answer, sim_account_dir
    from pairlab.adapters.paths import catalog_dir
    from pairlab.adapters.profiles import load_named_profile
    from pairlab.core.records import sha256_text
    from pairlab.core.schedule import PlannedEpisode
    from pairlab.core.schemas.catalog import load_suite
    from pairlab.core.schemas.episode import make_episode_id, make_pair_id

    suite = load_suite(catalog_dir(), suite_id)
    task = suite.task(task_id)
    profile = load_named_profile(profile_name)
    run_id = f"episode-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"
    pair_id = make_pair_id(run_id, task.id, 0)
    out = out_dir or Path(tempfile.mkdtemp(prefix="pairlab-episode-"))
    out.mkdir(parents=True, exist_ok=True)
    account = account_dir or sim_account_dir(out, profile)
    planned = PlannedEpisode(
        task_id=task.id,
        repetition=0,
        order=0,
        arm=arm,
        pair_id=pair_id,
        episode_id=make_episode_id(pair_id, arm),
    )
    endpoint = None
    if profile.endpoint == "emulator":  # the provider emulator, for this one episode
        from pairlab.adapters.run.provider import open_run_endpoint

        endpoint = open_run_endpoint(
            profile, run_id=run_id, backend_name=backend_name, ledger_dir=out / "emulator"
        )
    try:
        registered = (
            endpoint.register(
                episode_id=planned.episode_id, task_id=task.id, arm=arm, repetition=0, seed=seed
            )
            if endpoint is not None
            else None
        )
        spec = episode_spec(
            planned,
            run_id=run_id,
            suite=suite,
            entry=task,
            profile=endpoint.profile if endpoint else profile,
            model=model,
            seed=seed,
            keep_workspace=keep,
            account_dir=account,
            timeout_s=timeout_s,
            endpoint_url=registered.url if registered else None,
        )
        backend = endpoint.backend if endpoint else make_backend(backend_name, run_id=run_id)
        prepared = backend.prepare(spec)
        try:
            outcome = backend.run(prepared)
            collected = backend.collect(prepared, out / "collected")
            final_answer = extract_final_answer(outcome.stdout, profile.client)
            delivered, ledger_error = _delivered_tokens(collected, out)
            checks = grade(backend, prepared, task, final_answer, delivered)
        finally:
            backend.cleanup(prepared)
        truth = None
        if endpoint is not None and registered is not None:
            from pairlab.adapters.episode.io import read_episode_usage

            usage = read_episode_usage(profile, collected)
            truth = endpoint.check_episode(
                registered, out, client=profile.client, reader=usage.vector, stdout=outcome.stdout
            ).to_json()
    finally:
        if endpoint is not None:
            endpoint.close()
    passed = bool(checks) and all(c.passed is True for c in checks)
    return {
        "run_id": run_id,
        "episode_id": spec.episode_id,
        "task_id": task.id,
        "arm": arm,
        "profile": profile_name,
        "client": profile.client,
        "backend": backend.name,
        "argv": prepared.argv,
        "secret_names": prepared.secret_names,
        "exit_code": outcome.exit_code,
        "timed_out": outcome.timed_out,
        "oom_killed": outcome.oom_killed,
        "crashed": outcome.crashed,
        "error": outcome.error,
        "latency_ms": outcome.latency_ms,
        "started_at": outcome.started_at.isoformat() if outcome.started_at else None,
        "ended_at": outcome.ended_at.isoformat() if outcome.ended_at else None,
        "stdout_sha256": sha256_text(outcome.stdout),
        "stderr_sha256": sha256_text(outcome.stderr),
        "stdout_truncated": outcome.stdout_truncated,
        "stderr_truncated": outcome.stderr_truncated,
        "final_answer": final_answer,
        "delivered_tokens": delivered,
        "ledger_error": ledger_error,
        "collected": {
            "dest": str(collected.dest),
            "files": [f.model_dump() for f in collected.files],
        },
        "grader_checks": [c.model_dump(mode="json") for c in checks],
        "ground_truth": truth,
        "kept": keep,
        "workspace": prepared.mounts.get("workspace") if keep else None,
        "passed": passed,
    }


def _print_human(result: dict[str, Any]) -> None:
    typer.echo(f"episode {result['episode_id']} ({result['profile']} on {result['backend']})")
    typer.echo(
        f"  exit code {result['exit_code']}  timed out {result['timed_out']}  "
        f"oom {result['oom_killed']}  crashed {result['crashed']}  "
        f"latency {result['latency_ms']:.1f} ms"
        if result["latency_ms"] is not None
        else f"  did not start: {result['error']}"
    )
    typer.echo(f"  final answer: {result['final_answer']!r}")
    typer.echo(f"  collected into {result['collected']['dest']}:")
    for f in result["collected"]["files"]:
        typer.echo(f"    {f['sha256'][:16]}  {f['size_bytes']:>8}  {f['path']}")
    for check in result["grader_checks"]:
        mark = {True: "pass", False: "FAIL", None: "n/a "}[check["passed"]]
        typer.echo(f"  grader {mark} {check['name']} ({check['kind']}): {check['detail']}")
    truth = result.get("ground_truth")
    if truth is not None:
        verdict = "equals" if truth["agrees"] else "DIFFERS FROM"
        typer.echo(
            f"  usage (reader and the CLI's own) {verdict} the emulator's ground truth: "
            f"{truth['truth']} ({truth['requests']} requests)"
        )
    if result["kept"]:
        typer.echo(f"  kept workspace: {result['workspace']}")


@episode_app.command("run")
def run(
    profile: Annotated[str, typer.Option("--profile", help="runner profile (file stem)")],
    task: Annotated[str, typer.Option("--task", help="task id in the suite")],
    arm: Annotated[str, typer.Option("--arm", help="baseline | optimizer | retrieval | full")],
    backend: Annotated[str, typer.Option("--backend", help="local | docker")] = "local",
    suite: Annotated[str, typer.Option("--suite", help="catalog suite id")] = "core",
    keep: Annotated[bool, typer.Option("--keep", help="keep the workspace/volumes")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="print the outcome as JSON")] = False,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="where collected files go (default: a new temp dir)"),
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="model to ask the CLI for")] = None,
    seed: Annotated[int, typer.Option("--seed", help="episode seed")] = 0,
    timeout_s: Annotated[
        float | None, typer.Option("--timeout-s", help="override the profile's timeout")
    ] = None,
    account_dir: Annotated[
        Path | None, typer.Option("--account-dir", help="simulated quota account dir (sim only)")
    ] = None,
) -> None:
    """Run one episode and print its outcome, collected files and grader checks."""
    result = run_one_episode(
        profile_name=profile,
        task_id=task,
        arm=arm,
        backend_name=backend,
        suite_id=suite,
        keep=keep,
        out_dir=out,
        model=model,
        seed=seed,
        timeout_s=timeout_s,
        account_dir=account_dir,
    )
    if json_out:
        emit_json(result)
    else:
        _print_human(result)
    raise typer.Exit(0 if result["passed"] else 1)


def register(app: typer.Typer) -> None:
    app.add_typer(episode_app, name="episode")
