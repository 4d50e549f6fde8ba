"""``pairlab certify`` for a real CLI (certification level ``live-local``).

The real binary runs here, against the provider emulator, on the chosen backend:

1. **The CLI**: the bundled binary's version (the pinned wheel; on Docker the profile's
   image, built on first use) and what ``<cli> --version`` says in an episode, both
   recorded and compared with the profile's pin.
2. **Planted config** (:mod:`planted_config`): the CLI's full user config in a
   stand-in for the host HOME (handed to the backend as the host environment) and its
   project config in the probe task's workspace, every item with a side effect.
3. **One episode per arm** of the probe task (a catalog task and a seed whose script
   lists the files, reads and edits them and runs a command), the emulator keeping
   every request body. Evidence: the planted markers in the collected state dir, the
   planted text and the MCP servers offered in the request log, the intervention's
   own trace. The baseline must show none of it and no MCP server at all; each treated
   arm exactly the reference intervention -- offered, started, and answering a call.
4. **Which flag does the work**: the baseline once more without each isolation flag
   the profile declares; what appears then is what that flag alone keeps out (a flag
   whose removal leaks nothing here is reported as redundant -- not a failure).

The evidence is a table planted item x arm (and x ablation) in the report.
Deterministic configuration checks are never evidence about the intervention
(DESIGN 7).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from pairlab.adapters.backends.base import BASELINE_ARM
from pairlab.adapters.certify.live_probe import (
    FRESH_HOME,
    HOST_HOME_VARS,
    PROBE_SEED,
    PROBE_TASK,
    VERSION_PATTERN,
    LiveProbe,
    Observation,
    normal_server,
    observe,
)
from pairlab.adapters.certify.planted_config import PlantedItem, plant
from pairlab.adapters.certify.report import (
    BackendFactory,
    CertifyCheck,
    IsolationMatrix,
    MatrixRow,
    ProfileCertification,
)
from pairlab.adapters.certify.sim_probe import host_env_for
from pairlab.adapters.clients.registry import REAL_CLIS, resolve_cli
from pairlab.adapters.run.provider import open_run_endpoint
from pairlab.core.emulator.run_settings import EmulatorSettings
from pairlab.core.errors import PairlabError
from pairlab.core.schemas.intervention_manifest import DEFAULT_INTERVENTION
from pairlab.core.schemas.profile import IsolationFlag, RunnerProfile, without_run
from pairlab.intervention import SERVER_NAME


def _cli_check(profile: RunnerProfile, backend_name: str) -> tuple[CertifyCheck, str | None]:
    if backend_name == "docker":
        from pairlab.adapters.docker_engine import image_present
        from pairlab.adapters.run.provider import ensure_client_image

        tag = ensure_client_image(profile)
        image_id = image_present(tag)
        detail = f"{profile.image} = {tag} ({(image_id or '?')[:19]}), matching this checkout"
        return CertifyCheck(name="image", passed=True, detail=detail), None
    if profile.client not in REAL_CLIS:
        return CertifyCheck(
            name="cli", passed=False, detail=f"no bundled CLI '{profile.client}'"
        ), None
    cli = resolve_cli(profile.client)
    passed = profile.version in (None, cli.version)
    detail = f"bundled {cli.name} {cli.version} (wheel {cli.wheel}) at {cli.binary}"
    if not passed:
        detail += f"; the profile pins {profile.version}"
    return CertifyCheck(name="cli", passed=passed, detail=detail), cli.version


def _variant(
    profile: RunnerProfile, command: list[str], arm_args: dict[str, list[str]], args: list[str]
) -> RunnerProfile:
    """The profile with another command line (its declared flags no longer apply). A
    baseline left without arm args takes the first of ``args`` (the same argv: a profile
    must have baseline arm args)."""
    if not arm_args.get(BASELINE_ARM) and args:
        arm_args = {**arm_args, BASELINE_ARM: args[:1]}
        args = args[1:]
    isolation = profile.baseline_isolation.model_copy(update={"flags": []})
    return profile.model_copy(
        update={
            "command": command,
            "arm_args": arm_args,
            "args": args,
            "baseline_isolation": isolation,
        }
    )


def _version_check(probe: LiveProbe) -> tuple[CertifyCheck, str | None]:
    profile = probe.profile
    head, *rest = profile.version_command or [profile.command[0], "--version"]
    version_profile = _variant(profile, [head], {BASELINE_ARM: rest or ["--version"]}, [])
    _, _, output, code, error = probe.episode(BASELINE_ARM, version_profile)
    match = VERSION_PATTERN.search(output)
    if error is not None or code != 0 or match is None:
        return CertifyCheck(
            name="version", passed=False, detail=f"`{head} --version` said {output.strip()[:200]!r}"
        ), None
    version = match.group(0)
    passed = profile.version in (None, version)
    detail = f"`{head} --version` in an episode reports {version}"
    if not passed:
        detail += f", the profile pins {profile.version}"
    return CertifyCheck(name="version", passed=passed, detail=detail), version


def _judge_arm(seen: Observation, arm: str, items: list[PlantedItem]) -> CertifyCheck:
    name = f"isolation-{arm}"
    if seen.error is not None:
        return CertifyCheck(
            name=name, passed=False, detail=f"the {arm} episode failed: {seen.error}"
        )
    problems: list[str] = []
    leaked = sorted(seen.seen)
    if leaked:
        where = {i.slug: i.path for i in items}
        problems.append("leaked " + ", ".join(f"{s} ({where[s]})" for s in leaked))
    others = sorted(s for s in seen.servers if normal_server(s) != normal_server(SERVER_NAME))
    if others and not leaked:
        problems.append("unexpected MCP servers " + ", ".join(others))
    if arm == BASELINE_ARM:
        if (
            any(normal_server(s) == normal_server(SERVER_NAME) for s in seen.servers)
            or seen.intervention_calls
        ):
            problems.append(f"the baseline was offered {SERVER_NAME}")
        what = f"nothing planted and no MCP server in {seen.requests} requests"
    else:
        if not any(normal_server(s) == normal_server(SERVER_NAME) for s in seen.servers):
            problems.append(f"the intervention ({SERVER_NAME}) was never offered to the model")
        if seen.intervention_calls == 0:
            problems.append(f"the intervention ({SERVER_NAME}) answered no tool call")
        what = (
            f"exactly the intervention: {SERVER_NAME} offered, {seen.intervention_calls} "
            f"calls answered; nothing planted in {seen.requests} requests"
        )
    if problems:
        return CertifyCheck(
            name=name, passed=False, detail="isolation broken: " + "; ".join(problems)
        )
    return CertifyCheck(name=name, passed=True, detail=f"saw {what}")


def _ablation_check(flag: IsolationFlag, seen: Observation, baseline: Observation) -> CertifyCheck:
    name = f"flag {flag.name}"
    if seen.error is not None:
        return CertifyCheck(
            name=name, passed=False, detail=f"the baseline without it failed: {seen.error}"
        )
    extra = sorted(seen.seen - baseline.seen)
    servers = sorted(seen.servers - baseline.servers)
    if extra or servers:
        keeps = ", ".join(extra) + (f" (MCP servers {', '.join(servers)})" if servers else "")
        return CertifyCheck(
            name=name, passed=True, detail=f"does the work: without it the baseline saw {keeps}"
        )
    return CertifyCheck(
        name=name,
        passed=True,
        detail=f"redundant here: nothing planted leaks without it (other flags cover: {flag.strips})",
    )


def _matrix(items: list[PlantedItem], observations: list[Observation]) -> IsolationMatrix:
    rows = [
        MatrixRow(
            item=item.slug,
            scope=item.scope,
            path=item.path,
            what=item.what,
            seen={o.column: item.slug in o.seen for o in observations},
        )
        for item in items
    ]
    rows.append(
        MatrixRow(
            item=f"intervention:{SERVER_NAME}",
            scope="arm",
            path="--mcp-config / -c mcp_servers",
            what="the reference intervention, offered and answering",
            seen={
                o.column: any(normal_server(s) == normal_server(SERVER_NAME) for s in o.servers)
                and o.intervention_calls > 0
                for o in observations
            },
        )
    )
    return IsolationMatrix(columns=[o.column for o in observations], rows=rows)


def certify_live(
    name: str,
    profile: RunnerProfile,
    backend_name: str,
    factory: BackendFactory,
    checks: list[CertifyCheck],
    host_home: Path | None = None,
) -> ProfileCertification:
    """Certify a real CLI's profile on ``backend_name`` (``factory`` is unused: the
    run endpoint builds the backend, with the run network on Docker)."""
    del factory
    version: str | None = None
    matrix: IsolationMatrix | None = None
    lifecycle: dict[str, Any] | None = None
    wired = profile.intervention
    if wired is not None and wired.id != DEFAULT_INTERVENTION:
        # the probe judges the reference server (its name, its trace of answered calls)
        checks.append(
            CertifyCheck(
                name="intervention",
                passed=False,
                detail=f"live certification of the intervention '{wired.id}' is not "
                "implemented yet (issue 26, item 3): only 'reference' is certified live",
            )
        )
    try:
        cli_check, version = _cli_check(profile, backend_name)
        checks.append(cli_check)
    except PairlabError as exc:
        checks.append(
            CertifyCheck(name="cli", passed=False, detail=f"[{exc.reason}] {exc.message}")
        )
    if all(c.passed for c in checks):
        with tempfile.TemporaryDirectory(prefix="pairlab-certify-") as tmp:
            scratch = Path(tmp)
            home = host_home or scratch / "host-home"
            home.mkdir(parents=True, exist_ok=True)
            try:
                matrix, version, lifecycle = _probe_all(
                    name, profile, backend_name, scratch, home, checks, version
                )
            except PairlabError as exc:
                checks.append(
                    CertifyCheck(name="probe", passed=False, detail=f"[{exc.reason}] {exc.message}")
                )
    failed = any(not c.passed for c in checks)
    return ProfileCertification(
        client=profile.client,
        profile=name,
        status="failed" if failed else "passed",
        checks=checks,
        version=version,
        matrix=matrix,
        lifecycle=lifecycle,
    )


def _probe_all(
    name: str,
    profile: RunnerProfile,
    backend_name: str,
    scratch: Path,
    home: Path,
    checks: list[CertifyCheck],
    version: str | None,
) -> tuple[IsolationMatrix, str | None, dict[str, Any] | None]:
    settings = EmulatorSettings(keep_requests=True, wrong_probability=0.0)
    lifecycle: dict[str, Any] | None = None
    with open_run_endpoint(
        profile,
        run_id=f"certify-{name}",
        backend_name=backend_name,
        ledger_dir=scratch / "emulator",
        settings=settings,
        host_env={**os.environ, **host_env_for(home)},
        clean_orphans=False,
    ) as endpoint:
        probe = LiveProbe(name, profile, endpoint, scratch)
        items = plant(profile.client, home, probe.fixture)
        version_check, said = _version_check(probe)
        checks.append(version_check)
        observations = []
        for arm in profile.arm_args:
            seen = probe.observe(arm, arm, items)
            observations.append(seen)
            checks.append(_judge_arm(seen, arm, items))
            if seen.lifecycle is not None and lifecycle is None:
                lifecycle = seen.lifecycle
                checks.append(_lifecycle_check(arm, lifecycle))
        baseline = next((o for o in observations if o.column == BASELINE_ARM), Observation("-"))
        for flag in profile.baseline_isolation.flags:
            args = dict(probe.profile.arm_args)
            args[BASELINE_ARM] = without_run(args[BASELINE_ARM], flag.args)
            ablated = _variant(probe.profile, probe.profile.command, args, probe.profile.args)
            seen = probe.observe(f"baseline without {flag.name}", BASELINE_ARM, items, ablated)
            observations.append(seen)
            checks.append(_ablation_check(flag, seen, baseline))
        observations += _controls(probe, items, backend_name, baseline, checks)
    return _matrix(items, observations), version or said, lifecycle


def _lifecycle_check(arm: str, lifecycle: dict[str, Any]) -> CertifyCheck:
    events = ", ".join(f"{k} {v['status']}" for k, v in lifecycle["events"].items())
    return CertifyCheck(
        name=f"lifecycle ({arm}; deterministic verification, not causal evidence)",
        passed=bool(lifecycle["passed"]),
        detail=events,
    )


def _with_host_home(profile: RunnerProfile) -> RunnerProfile:
    allow = [*profile.env_allowlist, *HOST_HOME_VARS]
    return profile.model_copy(update={"env_allowlist": allow})


def _controls(
    probe: LiveProbe,
    items: list[PlantedItem],
    backend_name: str,
    baseline: Observation,
    checks: list[CertifyCheck],
) -> list[Observation]:
    """What the fresh HOME alone keeps out (local only: a container never sees the host's
    HOME), and a positive control: the baseline with no isolation at all, which shows the
    planted config is observable -- and which items this CLI never loads."""
    profile, found = probe.profile, []
    if backend_name == "local":
        seen = probe.observe(
            "baseline with the host HOME", BASELINE_ARM, items, _with_host_home(profile)
        )
        found.append(seen)
        checks.append(_ablation_check(FRESH_HOME, seen, baseline))
    bare = list(profile.arm_args[BASELINE_ARM])
    for flag in profile.baseline_isolation.flags:
        bare = without_run(bare, flag.args)
    control = _variant(
        profile, profile.command, {**profile.arm_args, BASELINE_ARM: bare}, profile.args
    )
    if backend_name == "local":
        control = _with_host_home(control)
    seen = probe.observe("no isolation (control)", BASELINE_ARM, items, control)
    found.append(seen)
    never = [i.slug for i in items if i.slug not in seen.seen]
    if backend_name != "local":
        hidden = [i.slug for i in items if i.scope == "user" and i.slug in never]
        never = [s for s in never if s not in hidden]
        if hidden:
            never.append(f"user items ({len(hidden)}: a container never sees the host HOME)")
    if seen.error is not None or not seen.seen:
        checks.append(
            CertifyCheck(
                name="control",
                passed=False,
                detail=f"with no isolation the CLI showed no planted item ({seen.error or 'nothing seen'}): "
                "the probe cannot observe leaks",
            )
        )
    else:
        checks.append(
            CertifyCheck(
                name="control",
                passed=True,
                detail=f"with no isolation the CLI loads {len(seen.seen)} of {len(items)} planted items"
                + (f"; never loaded here: {', '.join(never)}" if never else ""),
            )
        )
    return found


__all__ = ["PROBE_SEED", "PROBE_TASK", "certify_live", "observe"]
