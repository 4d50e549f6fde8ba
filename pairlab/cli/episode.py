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
    from pairlab.adapters.backends.base import PreparedEpisode, RunOutcome
    from pairlab.adapters.episode.session import CollectedEpisode

episode_app = typer.Typer(help="Run single episodes.", no_args_is_help=True)


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
    intervention: str = "reference",
    account_name: str | None = None,
) -> dict[str, Any]:
    from pairlab.adapters.episode.build import episode_spec
    from pairlab.adapters.episode.io import sim_account_dir
    from pairlab.adapters.episode.session import collect_episode, open_run_environment, prepared
    from pairlab.adapters.intervention_install import install_for_backend
    from pairlab.adapters.interventions import load_intervention
    from pairlab.adapters.paths import catalog_dir
    from pairlab.adapters.profiles import load_named_profile
    from pairlab.core.accounts import refuse_credential_parameters
    from pairlab.core.intervention_wiring import require_arms
    from pairlab.core.schedule import PlannedEpisode
    from pairlab.core.schemas.catalog import load_suite
    from pairlab.core.schemas.episode import make_episode_id, make_pair_id

    refuse_credential_parameters(
        {"profile": profile_name, "task": task_id, "arm": arm, "suite": suite_id, "model": model}
    )
    wired = load_intervention(intervention)  # a refused manifest: exit 2, nothing runs
    suite = load_suite(catalog_dir(), suite_id)
    task = suite.task(task_id)
    profile = load_named_profile(profile_name, intervention=wired)
    require_arms(profile, [arm])
    # a pypi intervention: installed (cached) before the episode, for the baseline too --
    # on Docker both arms run its derived image (adapters/images/intervention_images)
    profile = install_for_backend(profile, wired, backend_name)
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
    # the provider emulator for this one episode when the profile runs against it
    # with an account: its provider URL and credential, no emulator
    env = open_run_environment(
        profile,
        backend_name=backend_name,
        run_id=run_id,
        ledger_dir=out / "emulator",
        account=account_name,
    )
    try:
        registered = env.register(
            episode_id=planned.episode_id, task_id=task.id, arm=arm, repetition=0, seed=seed
        )
        spec = episode_spec(
            planned,
            run_id=run_id,
            suite=suite,
            entry=task,
            profile=env.profile,
            model=model,
            seed=seed,
            keep_workspace=keep,
            account_dir=account,
            timeout_s=timeout_s,
            endpoint_url=registered.url if registered else None,
        )
        with prepared(env.backend, spec) as episode:
            outcome = env.backend.run(episode)
            if account_name is not None:  # a refused credential: exit 2, nothing recorded
                from pairlab.adapters.accounts.rejection import stop_on_rejected_credential

                stop_on_rejected_credential(profile.client, account_name, outcome.stdout)
            got = collect_episode(
                env.backend, episode, env.profile, task, outcome, out, soft_ledger=True
            )
            # no request reached the account's provider: exit 3, provider-unreachable
            env.stop_on_account_failure(outcome.stdout, got.usage.vector)
        check = env.check_episode(registered, out, reader=got.usage.vector, stdout=outcome.stdout)
        truth = check.to_json() if check is not None else None
        health = env.check_intervention(
            registered,
            arm=arm,
            stdout=outcome.stdout,
            stderr=outcome.stderr,
            files=got.files,
            stdout_truncated=outcome.stdout_truncated,
        )
    finally:
        env.close()
    result: dict[str, Any] = {
        "run_id": run_id,
        "episode_id": spec.episode_id,
        "task_id": task.id,
        "arm": arm,
    }
    result |= {"profile": profile_name, "client": profile.client, "backend": env.backend.name}
    result["intervention"] = wired.identity.to_json()
    # loaded, or why not (core/intervention_health); null on the baseline or when unobserved
    result["intervention_status"] = health.status.value if health else None
    result["intervention_detail"] = health.detail if health else None
    # its tool calls, errors and oversized results (null: that source was not read)
    result["intervention_tools"] = health.tools.to_json() if health and health.tools else None
    # per model request, the tokens it carried of the server
    defs = health.definition_tokens if health else None
    result["intervention_definition_tokens"] = list(defs) if defs is not None else None
    result |= {"account": account_name}
    return result | _outcome_json(episode, outcome, got, truth, keep)


def _outcome_json(
    episode: PreparedEpisode,
    outcome: RunOutcome,
    got: CollectedEpisode,
    truth: dict[str, Any] | None,
    keep: bool,
) -> dict[str, Any]:
    """What the episode did, collected and was graded, as ``--json`` prints it."""
    from pairlab.core.records import sha256_text

    checks = got.checks
    return {
        "argv": episode.argv,
        "secret_names": episode.secret_names,
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
        "final_answer": got.final_answer,
        "delivered_tokens": got.delivered_tokens,
        "ledger_error": got.ledger_error,
        "collected": {
            "dest": str(got.files.dest),
            "files": [f.model_dump() for f in got.files.files],
        },
        "grader_checks": [c.model_dump(mode="json") for c in checks],
        "ground_truth": truth,
        "kept": keep,
        "workspace": episode.mounts.get("workspace") if keep else None,
        "passed": bool(checks) and all(c.passed is True for c in checks),
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
    intervention: Annotated[
        str,
        typer.Option(
            "--intervention",
            help="what a treated arm runs: an id under interventions/ or a manifest's path",
        ),
    ] = "reference",
    account: Annotated[
        str | None,
        typer.Option(
            "--account",
            help="run on this registered account (pairlab account add): its credential and "
            "provider URL instead of the emulator",
        ),
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
        intervention=intervention,
        account_name=account,
    )
    if json_out:
        emit_json(result)
    else:
        _print_human(result)
    raise typer.Exit(0 if result["passed"] else 1)


def register(app: typer.Typer) -> None:
    app.add_typer(episode_app, name="episode")
