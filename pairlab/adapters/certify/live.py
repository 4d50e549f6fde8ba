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

import json
import os
import re
import secrets
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pairlab.adapters.backends.base import BASELINE_ARM, EpisodeSpec, ExecutionBackend
from pairlab.adapters.certify.planted_config import MARKER_DIR, PlantedItem, plant
from pairlab.adapters.certify.report import (
    BackendFactory,
    CertifyCheck,
    IsolationMatrix,
    MatrixRow,
    ProfileCertification,
)
from pairlab.adapters.certify.sim_probe import host_env_for
from pairlab.adapters.clients.registry import REAL_CLIS, resolve_cli
from pairlab.adapters.episode.finding_evidence import lifecycle_of
from pairlab.adapters.episode.session import run_and_collect
from pairlab.adapters.paths import catalog_dir
from pairlab.adapters.run.provider import EpisodeEndpoint, RunEndpoint, open_run_endpoint
from pairlab.core.emulator.run_settings import EmulatorSettings
from pairlab.core.errors import PairlabError
from pairlab.core.schemas.catalog import load_suite
from pairlab.core.schemas.profile import IsolationFlag, RunnerProfile, without_run
from pairlab.intervention import SERVER_NAME

PROBE_SUITE: Final = "core"
PROBE_TASK: Final = "fix-median"
# fix-median's script under seed 0 lists the files (`ls`), reads the README and the file,
# edits it and checks the syntax (`python3`): every arm runs a shell command a planted
# Codex rule can forbid (tests/unit pins the draw).
PROBE_SEED: Final = 0
PROBE_TIMEOUT_S: Final = 180.0
TRACE_FILE: Final = "token-optimizer-trace.jsonl"
# the host's HOME variables (a profile that allowlists them hands the episode the user's config)
HOST_HOME_VARS: Final = ("HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME")
_FRESH_HOME: Final = IsolationFlag(
    args=["fresh HOME"], strips="the host user's own config (a fresh HOME per episode)"
)
_VERSION = re.compile(r"\d+\.\d+\.\d+")


@dataclass
class Observation:
    """What one episode showed."""

    column: str
    exit_code: int | None = None
    error: str | None = None
    seen: set[str] = field(default_factory=set)  # planted item slugs
    servers: set[str] = field(default_factory=set)  # MCP servers offered to the model
    intervention_calls: int = 0  # tools/call the intervention answered (its trace)
    requests: int = 0
    lifecycle: dict[str, Any] | None = None  # treated arms: claim 1's lifecycle events


def _bodies(registered: EpisodeEndpoint) -> list[dict[str, Any]]:
    folder = registered.ledger_path.with_suffix(".requests")
    bodies = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if isinstance(data, dict):
            bodies.append(data)
    return bodies


def _normal(server: str) -> str:
    return server.replace("-", "_")  # Codex turns - into _ in namespaces


def _trace_calls(trace: Path) -> int:
    if not trace.is_file():
        return 0
    answered, calls = 0, set()
    for line in trace.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
            message = json.loads(entry["line"])
        except (ValueError, KeyError, TypeError):
            continue
        if entry.get("dir") == "in" and message.get("method") == "tools/call":
            calls.add(json.dumps(message.get("id")))
        elif entry.get("dir") == "out" and json.dumps(message.get("id")) in calls:
            answered += "result" in message and not message["result"].get("isError")
    return answered


def observe(
    column: str,
    client: str,
    registered: EpisodeEndpoint,
    collected: Path,
    items: list[PlantedItem],
) -> Observation:
    """The evidence of one episode: markers, request text, offered MCP servers, trace."""
    bodies = _bodies(registered)
    text = "\n".join(json.dumps(b, ensure_ascii=False) for b in bodies)
    servers: set[str] = set()
    for body in bodies:
        servers |= REAL_CLIS[client].offered_servers(body)
    markers_dir = collected / "state" / MARKER_DIR
    markers = {p.name for p in markers_dir.iterdir()} if markers_dir.is_dir() else set()
    seen = set()
    for item in items:
        normal = {_normal(s) for s in servers}
        if (
            ("marker" in item.evidence and item.slug in markers)
            or ("text" in item.evidence and item.text in text)
            or ("mcp" in item.evidence and _normal(item.server) in normal)
        ):
            seen.add(item.slug)
    return Observation(
        column=column,
        seen=seen,
        servers=servers,
        intervention_calls=_trace_calls(collected / "state" / TRACE_FILE),
        requests=len(bodies),
    )


class _LiveProbe:
    """Runs probe episodes of one profile against the run endpoint's emulator."""

    def __init__(self, name: str, profile: RunnerProfile, endpoint: RunEndpoint, scratch: Path):
        self.name, self.endpoint, self.scratch = name, endpoint, scratch
        env = {**profile.env, "TOKEN_OPTIMIZER_TRACE": "{state}/" + TRACE_FILE}
        self.profile = endpoint.profile.model_copy(update={"env": env})
        suite = load_suite(catalog_dir(), PROBE_SUITE)
        self.task = suite.task(PROBE_TASK)
        self.fixture = scratch / "fixture"
        shutil.copytree(suite.fixture_path(self.task), self.fixture)
        self.run_id = f"certify-{name}-{secrets.token_hex(3)}"
        self.count = 0

    @property
    def backend(self) -> ExecutionBackend:
        return self.endpoint.backend

    def episode(
        self, arm: str, profile: RunnerProfile | None = None
    ) -> tuple[EpisodeEndpoint, Path, str, int | None, str | None]:
        """(registration, collected dir, stdout + stderr, exit code, error)."""
        self.count += 1
        pair_id = f"{self.run_id}:{PROBE_TASK}:{self.count}"
        registered = self.endpoint.register(
            episode_id=f"{pair_id}:{arm}",
            task_id=PROBE_TASK,
            arm=arm,
            repetition=self.count,
            seed=PROBE_SEED,
        )
        spec = EpisodeSpec(
            run_id=self.run_id,
            episode_id=f"{pair_id}:{arm}",
            pair_id=pair_id,
            task_id=PROBE_TASK,
            arm=arm,
            prompt=self.task.prompt,
            profile=profile or self.profile,
            fixture_dir=self.fixture,
            workspace_subdir=self.task.workspace,
            model=self.profile.model,
            timeout_s=min(self.profile.timeout_s, PROBE_TIMEOUT_S),
            seed=PROBE_SEED,
            endpoint_url=registered.url,
        )
        dest = self.scratch / f"collected-{self.count}"
        _, outcome, _ = run_and_collect(self.backend, spec, dest)
        error = outcome.error or ("timed out" if outcome.timed_out else None)
        return registered, dest, outcome.stdout + "\n" + outcome.stderr, outcome.exit_code, error

    def observe(
        self, column: str, arm: str, items: list[PlantedItem], profile: RunnerProfile | None = None
    ) -> Observation:
        registered, collected, output, code, error = self.episode(arm, profile)
        seen = observe(column, self.profile.client, registered, collected, items)
        seen.exit_code, seen.error = code, error
        if arm != BASELINE_ARM and profile is None:
            seen.lifecycle = lifecycle_of(self.profile.client, collected, TRACE_FILE)
        if code != 0 and error is None:
            seen.error = f"exit {code}: {output.strip()[-300:]}"
        return seen


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


def _version_check(probe: _LiveProbe) -> tuple[CertifyCheck, str | None]:
    profile = probe.profile
    head, *rest = profile.version_command or [profile.command[0], "--version"]
    version_profile = _variant(profile, [head], {BASELINE_ARM: rest or ["--version"]}, [])
    _, _, output, code, error = probe.episode(BASELINE_ARM, version_profile)
    match = _VERSION.search(output)
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
    others = sorted(s for s in seen.servers if _normal(s) != _normal(SERVER_NAME))
    if others and not leaked:
        problems.append("unexpected MCP servers " + ", ".join(others))
    if arm == BASELINE_ARM:
        if any(_normal(s) == _normal(SERVER_NAME) for s in seen.servers) or seen.intervention_calls:
            problems.append(f"the baseline was offered {SERVER_NAME}")
        what = f"nothing planted and no MCP server in {seen.requests} requests"
    else:
        if not any(_normal(s) == _normal(SERVER_NAME) for s in seen.servers):
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
                o.column: any(_normal(s) == _normal(SERVER_NAME) for s in o.servers)
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
        probe = _LiveProbe(name, profile, endpoint, scratch)
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
    probe: _LiveProbe,
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
        checks.append(_ablation_check(_FRESH_HOME, seen, baseline))
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
