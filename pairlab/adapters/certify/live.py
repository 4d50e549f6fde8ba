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
   arm exactly the certified intervention's server (``--intervention``, default the
   reference; its manifest's ``mcp_name``), listed in every request with the same tools
   -- and the reference server answering a call (a third-party server need not: the
   scripted model calls it only by a usage recipe). The intervention's own server is
   also planted under its name in the user's config (:mod:`planted_config`): it must
   stay out of every arm. A pypi intervention is installed first, as an episode would.
   Per treated arm the report records the tools the CLI listed and their cl100k cost
   per request (:func:`definition_tokens`), compared with the server's own tools/list
   (``ListedTools.against``: Codex names only the tools a search loaded).
   Before any episode, the server itself is started as each treated arm starts it and
   asked its ``tools/list`` (recorded as ``server_tools``); the manifest's usage recipes
   are checked against it (a ``recipes`` check: ``recipe-unknown-tool``,
   ``recipe-invalid-arguments``; a failure runs no episode).
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
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pairlab.adapters.backends.base import BASELINE_ARM
from pairlab.adapters.certify.account_path import CertifyAccount, probe_host_env
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
    ListedTools,
    MatrixRow,
    ProfileCertification,
)
from pairlab.adapters.certify.sim_probe import host_env_for
from pairlab.adapters.clients.base import ServerListing, listing_tokens
from pairlab.adapters.clients.registry import REAL_CLIS, resolve_cli
from pairlab.adapters.intervention_install import install_for_backend
from pairlab.adapters.interventions import LoadedIntervention
from pairlab.adapters.mcp_tools_list import tools_listing
from pairlab.adapters.run.provider import open_run_endpoint
from pairlab.core.accounting.tokenizer import TokenCounter, load_token_counter
from pairlab.core.emulator.run_settings import EmulatorSettings
from pairlab.core.errors import PairlabError
from pairlab.core.recipe_check import RecipeProblem, check_recipes
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


@dataclass(frozen=True)
class Target:
    """The certified intervention as the probe judges it: its MCP server's name (the
    manifest's ``mcp_name``) and whether it is the reference server, which traces its
    calls and must answer one (a third-party server need not: the scripted model calls
    it only by a usage recipe, issue 26 item 4)."""

    server: str
    traced: bool
    identity: dict[str, str] | None = None

    def offered(self, seen: Observation) -> bool:
        return normal_server(self.server) in {normal_server(s) for s in seen.servers} or any(
            listing.listed for listing in seen.listings
        )


def _target(intervention: LoadedIntervention | None) -> Target:
    if intervention is None:
        return Target(SERVER_NAME, traced=True)
    manifest = intervention.manifest
    return Target(
        manifest.mcp_name,
        traced=manifest.id == DEFAULT_INTERVENTION,
        identity=intervention.identity.to_json(),
    )


def definition_tokens(listing: ServerListing, counter: TokenCounter) -> int:
    """The cl100k cost of what one request carried of the server's tools
    (:func:`pairlab.adapters.clients.base.listing_tokens`: the definitions as carried, plus
    the lines naming deferred tools or the server; the emulator records the same per
    request of every run, ``RequestRow.mcp_definition_tokens``)."""
    return listing_tokens(listing, counter.count)


def _listed_tools(
    arm: str, seen: Observation, target: Target, counter: TokenCounter
) -> ListedTools:
    names = list(dict.fromkeys(n for listing in seen.listings for n in listing.tools))
    return ListedTools(
        arm=arm,
        server=target.server,
        tools=names,
        requests=seen.requests,
        definition_tokens=[definition_tokens(listing, counter) for listing in seen.listings],
        deferred=any(listing.texts for listing in seen.listings),
        encoding=counter.encoding_name,
    )


def _judge_arm(
    seen: Observation, arm: str, items: list[PlantedItem], target: Target
) -> CertifyCheck:
    """The baseline: nothing planted, no MCP server. A treated arm: nothing planted (the
    intervention's server planted under its own name included: the arm's wiring must
    win), no other MCP server, and the certified server listed in every request with
    the same tools in each (the reference server must also answer a call)."""
    name = f"isolation-{arm}"
    server = target.server
    if seen.error is not None:
        return CertifyCheck(
            name=name, passed=False, detail=f"the {arm} episode failed: {seen.error}"
        )
    problems: list[str] = []
    leaked = sorted(seen.seen)
    if leaked:
        where = {i.slug: i.path for i in items}
        problems.append("leaked " + ", ".join(f"{s} ({where[s]})" for s in leaked))
    others = sorted(s for s in seen.servers if normal_server(s) != normal_server(server))
    if others and not leaked:
        problems.append("unexpected MCP servers " + ", ".join(others))
    if arm == BASELINE_ARM:
        if target.offered(seen) or seen.intervention_calls:
            problems.append(f"the baseline was offered {server}")
        what = f"nothing planted and no MCP server in {seen.requests} requests"
    else:
        listed = [listing for listing in seen.listings if listing.listed]
        toolsets = {frozenset(listing.tools) for listing in seen.listings if listing.tools}
        if not target.offered(seen):
            problems.append(f"the intervention ({server}) was never offered to the model")
        elif len(listed) < seen.requests:
            problems.append(
                f"the intervention ({server}) was listed in {len(listed)} of {seen.requests} "
                "requests"
            )
        if len(toolsets) > 1:
            problems.append(f"the requests listed {len(toolsets)} different tool sets of {server}")
        if target.traced and seen.intervention_calls == 0:
            problems.append(f"the intervention ({server}) answered no tool call")
        tools = max((len(t) for t in toolsets), default=0)
        shown = f"{tools} tools" if tools else "its tools deferred behind tool_search"
        if tools and any(listing.texts for listing in seen.listings):
            shown += ", deferred behind the tool search"
        if target.traced:
            calls = f"{seen.intervention_calls} calls answered"
        else:
            calls = (
                "no call required (the scripted model calls a third-party server only by "
                "a usage recipe)"
            )
        what = (
            f"exactly the intervention: {server} listed in all {seen.requests} requests "
            f"({shown}), {calls}; nothing planted, no other MCP server"
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


def _matrix(
    items: list[PlantedItem], observations: list[Observation], target: Target
) -> IsolationMatrix:
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
            item=f"intervention:{target.server}",
            scope="arm",
            path="--mcp-config / -c mcp_servers",
            what="the intervention, offered" + (" and answering" if target.traced else ""),
            seen={
                o.column: target.offered(o) and (o.intervention_calls > 0 or not target.traced)
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
    intervention: LoadedIntervention | None = None,
    account: CertifyAccount | None = None,
) -> ProfileCertification:
    """Certify a real CLI's profile, wired with ``intervention`` (default: the reference),
    on ``backend_name`` (``factory`` is unused: the run endpoint builds the backend, with
    the run network on Docker). With ``account``, on the account path
    (``account_path``: its credential in the CLI's form, the stand-in requiring it)."""
    del factory
    if account is not None:
        profile = account.probe_profile(profile)
    version: str | None = None
    matrix: IsolationMatrix | None = None
    lifecycle: dict[str, Any] | None = None
    listed: list[ListedTools] | None = None
    target = _target(intervention)
    try:
        cli_check, version = _cli_check(profile, backend_name)
        checks.append(cli_check)
    except PairlabError as exc:
        checks.append(
            CertifyCheck(name="cli", passed=False, detail=f"[{exc.reason}] {exc.message}")
        )
    if intervention is not None and intervention.manifest.install.pypi is not None:
        profile = _installed(profile, intervention, backend_name, checks)
    server_tools: dict[str, list[str]] | None = None
    if intervention is not None and all(c.passed for c in checks):
        server_tools = _server_tools(profile, intervention, checks)
    if all(c.passed for c in checks):
        with tempfile.TemporaryDirectory(prefix="pairlab-certify-") as tmp:
            scratch = Path(tmp)
            home = host_home or scratch / "host-home"
            home.mkdir(parents=True, exist_ok=True)
            try:
                matrix, version, lifecycle, listed = _probe_all(
                    name, profile, backend_name, scratch, home, checks, version, target, account
                )
            except PairlabError as exc:
                checks.append(
                    CertifyCheck(name="probe", passed=False, detail=f"[{exc.reason}] {exc.message}")
                )
            if account is not None:
                written = json.dumps(
                    [
                        [c.model_dump(mode="json") for c in checks],
                        matrix.model_dump(mode="json") if matrix else None,
                        [t.model_dump(mode="json") for t in listed or []],
                    ]
                )
                checks.extend(account.checks(scratch, written))
    if listed is not None and server_tools is not None:  # the CLI's listing vs tools/list
        listed = [t.against(server_tools.get(t.arm)) for t in listed]
    failed = any(not c.passed for c in checks)
    return ProfileCertification(
        client=profile.client,
        profile=name,
        status="failed" if failed else "passed",
        checks=checks,
        version=version,
        matrix=matrix,
        lifecycle=lifecycle,
        intervention=target.identity,
        listed_tools=listed,
        server_tools=server_tools,
        account=account.stamp() if account is not None else None,
    )


def _server_tools(
    profile: RunnerProfile, intervention: LoadedIntervention, checks: list[CertifyCheck]
) -> dict[str, list[str]] | None:
    """Ask the server its real ``tools/list`` per treated arm (started as the arm starts
    it, ``adapters/mcp_tools_list``) and check the manifest's usage recipes against it
    (``core/recipe_check``), before any episode: a recipe naming a tool the server does
    not list, or arguments its ``inputSchema`` refuses, is a failed ``recipes`` check
    with the reason code, and no episode runs. Returns the tool names per arm."""
    manifest = intervention.manifest
    if manifest.kind != "stdio":
        return None  # not spawned here; the CLI's listing (listed_tools) still stands
    found: dict[str, list[str]] = {}
    problems: list[RecipeProblem] = []
    for arm in (a for a in profile.arm_args if a != BASELINE_ARM):
        try:
            listing = tools_listing(intervention, arm)
        except PairlabError as exc:
            detail = f"[{exc.reason}] {arm}: {exc.message}"
            checks.append(CertifyCheck(name="server-tools", passed=False, detail=detail))
            return found or None
        found[arm] = listing.names
        problems += check_recipes(manifest.recipes, listing.tools)
    listed = "; ".join(f"{arm}: {len(names)} tools" for arm, names in found.items())
    checks.append(
        CertifyCheck(name="server-tools", passed=True, detail=f"the server's tools/list: {listed}")
    )
    if problems:
        shown = "; ".join(dict.fromkeys(p.line() for p in problems))
        checks.append(
            CertifyCheck(name="recipes", passed=False, detail=f"[{problems[0].reason}] {shown}")
        )
    elif manifest.recipes:
        tasks = ", ".join(sorted(manifest.recipes))
        checks.append(
            CertifyCheck(
                name="recipes",
                passed=True,
                detail=f"usage recipes for {tasks} fit the server's tools and inputSchema",
            )
        )
    else:
        checks.append(
            CertifyCheck(
                name="recipes",
                passed=True,
                detail="no usage recipe: runs measure the floor (tool definitions only)",
            )
        )
    return found


def _installed(
    profile: RunnerProfile,
    intervention: LoadedIntervention,
    backend_name: str,
    checks: list[CertifyCheck],
) -> RunnerProfile:
    """A pypi intervention installed (cached) into its own environment, as an episode
    would run it; an install that fails is a failed check and no episode runs."""
    requirement = intervention.manifest.install.pypi
    try:
        installed = install_for_backend(profile, intervention, backend_name)
    except PairlabError as exc:
        detail = f"{requirement}: [{exc.reason}] {exc.message}"
        checks.append(CertifyCheck(name="install", passed=False, detail=detail))
        return profile
    where = ", ".join(installed.treatment.path_prepend)
    detail = f"{requirement} in its own environment, first on the treated arms' PATH ({where})"
    if installed.image != profile.image:  # Docker: an image derived from the client image
        detail += f", in {installed.image} (both arms)"
    checks.append(CertifyCheck(name="install", passed=True, detail=detail))
    return installed


def _probe_all(
    name: str,
    profile: RunnerProfile,
    backend_name: str,
    scratch: Path,
    home: Path,
    checks: list[CertifyCheck],
    version: str | None,
    target: Target,
    account: CertifyAccount | None = None,
) -> tuple[IsolationMatrix, str | None, dict[str, Any] | None, list[ListedTools]]:
    counter = load_token_counter()
    listed: list[ListedTools] = []
    settings = EmulatorSettings(keep_requests=True, wrong_probability=0.0)
    lifecycle: dict[str, Any] | None = None
    host_env = {**os.environ, **host_env_for(home)}
    options: dict[str, Any] = {}
    if account is not None:
        host_env = probe_host_env(host_env_for(home))
        options = account.endpoint_options(profile)
    with open_run_endpoint(
        profile,
        run_id=f"certify-{name}",
        backend_name=backend_name,
        ledger_dir=scratch / "emulator",
        settings=settings,
        host_env=host_env,
        clean_orphans=False,
        **options,
    ) as endpoint:
        probe = LiveProbe(name, profile, endpoint, scratch, target.server, target.traced)
        items = plant(profile.client, home, probe.fixture, target.server)
        version_check, said = _version_check(probe)
        checks.append(version_check)
        observations = []
        for arm in profile.arm_args:
            seen = probe.observe(arm, arm, items)
            observations.append(seen)
            checks.append(_judge_arm(seen, arm, items, target))
            if arm != BASELINE_ARM:
                listed.append(_listed_tools(arm, seen, target, counter))
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
    return _matrix(items, observations, target), version or said, lifecycle, listed


def _lifecycle_check(arm: str, lifecycle: dict[str, Any]) -> CertifyCheck:
    events = ", ".join(f"{k} {v['status']}" for k, v in lifecycle["events"].items())
    return CertifyCheck(
        name=f"lifecycle ({arm}; deterministic verification, not causal evidence)",
        passed=bool(lifecycle["passed"]),
        detail=events,
    )


def _with_host_home(profile: RunnerProfile) -> RunnerProfile:
    """The profile taking the host's HOME and config dirs. A ChatGPT login lives in the
    episode's CODEX_HOME (``account_path``), so on that path CODEX_HOME stays the
    episode's: the control then cannot show the host's ~/.codex items."""
    keep = {"CODEX_HOME"} if "CODEX_REFRESH_TOKEN_URL_OVERRIDE" in profile.env else set()
    allow = [*profile.env_allowlist, *(v for v in HOST_HOME_VARS if v not in keep)]
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


__all__ = ["PROBE_SEED", "PROBE_TASK", "certify_live", "definition_tokens", "observe"]
