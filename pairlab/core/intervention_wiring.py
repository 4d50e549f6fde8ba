"""Each CLI's treated-arm wiring, generated from an intervention manifest.

A runner profile names no intervention. Its treated arms hold the placeholder element
``{intervention}`` where the wiring goes, and its ``intervention_wiring`` says which
generator fills it; :func:`wire_profile` replaces the placeholder for the manifest's
supported arms, drops the arms it does not support, adds the manifest's environment
to the treated arms, and stamps the profile with the intervention's identity. An
unwired placeholder never reaches a command line (``backends.environment.build_argv``
refuses it), so a treated arm cannot silently run without its intervention.

* ``claude-mcp-config`` (Claude Code): ``--strict-mcp-config --mcp-config <json>`` --
  only the servers of that inline document, none from any config file. Claude Code
  hands the server its whole environment.
* ``codex-mcp-servers`` (Codex): ``-c mcp_servers.<name>={...}`` -- the profile's
  command ends with ``exec`` (a server given before ``exec`` is never started); the
  inline table names ``env_vars`` (Codex passes the server only HOME, PATH, the locale
  and those), ``startup_timeout_sec`` and ``required = true`` (Codex then waits for the
  server's handshake before its first request, as Claude Code does).
  Claude Code's startup timeout is a variable: treated arms get ``MCP_TIMEOUT`` (ms)
  from the manifest's ``startup_timeout_s``.

Measured against the real binaries: tests/integration/test_intervention_real_clis.py;
the generated arguments for ``interventions/reference.yaml`` are byte-identical to what
the profiles wired by hand before, but for Codex's ``required = true``
(tests/unit/test_intervention_wiring_generated.py).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from typing import Any, Final, Literal

from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.episode import ARMS, EpisodeRecord
from pairlab.core.schemas.intervention_manifest import (
    DEFAULT_INTERVENTION,
    TREATED_ARMS,
    InterventionIdentity,
    InterventionManifest,
    intervention_identity,
)
from pairlab.core.schemas.profile import (
    INTERVENTION_PLACEHOLDER,
    InterventionStamp,
    RunnerProfile,
)
from pairlab.core.schemas.usage_recipe import TaskRecipe

EMPTY_CLAUDE_MCP_CONFIG: Final = '{"mcpServers":{}}'


def _server_args(manifest: InterventionManifest, arm: str) -> list[str]:
    wiring = manifest.arm_wiring(arm)
    if wiring is None:
        raise InvalidInputError(
            f"intervention '{manifest.id}' does not support the {arm} arm "
            f"(supported: {', '.join(manifest.supported_arms)})",
            reason=ReasonCode.ARM_NOT_SUPPORTED,
        )
    return [*manifest.args, *wiring.args]


def claude_mcp_config(manifest: InterventionManifest, arm: str) -> dict[str, Any]:
    """The ``--mcp-config`` / ``.claude.json`` ``mcpServers`` document for one arm."""
    server: dict[str, Any]
    if manifest.kind == "streamable-http":
        server = {"type": "http", "url": manifest.url}
    else:
        server = {"type": "stdio", "command": manifest.command, "args": _server_args(manifest, arm)}
    return {"mcpServers": {manifest.mcp_name: server}}


def claude_mcp_config_json(manifest: InterventionManifest, arm: str) -> str:
    return json.dumps(claude_mcp_config(manifest, arm), separators=(",", ":"))


def claude_arm_args(manifest: InterventionManifest, arm: str) -> list[str]:
    """Treated-arm flags: only this server (inline JSON, no file to place)."""
    return ["--strict-mcp-config", "--mcp-config", claude_mcp_config_json(manifest, arm)]


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid TOML basic string


def _toml_array(values: Sequence[str]) -> str:
    return "[" + ", ".join(_toml_string(v) for v in values) + "]"


def _codex_fields(manifest: InterventionManifest, arm: str) -> list[tuple[str, str]]:
    if manifest.kind == "streamable-http":
        head = [("url", _toml_string(manifest.url or ""))]
    else:
        head = [
            ("command", _toml_string(manifest.command)),
            ("args", _toml_array(_server_args(manifest, arm))),
            ("env_vars", _toml_array(manifest.env_vars)),
        ]
    # required: Codex waits for the server's handshake (up to startup_timeout_sec) before
    # its first request, and exits if it fails; without it, `codex exec` sends its first
    # request at once and a server slower than the episode is never listed (measured:
    # mcp-server-git, 7-10 s to answer initialize on a loaded machine, never offered)
    return [
        *head,
        ("startup_timeout_sec", str(manifest.startup_timeout_s)),
        ("required", "true"),
    ]


def codex_server_table(manifest: InterventionManifest, arm: str) -> str:
    """The server as an inline TOML table (the value of ``-c mcp_servers.<name>=``)."""
    return "{" + ", ".join(f"{k} = {v}" for k, v in _codex_fields(manifest, arm)) + "}"


def codex_arm_args(manifest: InterventionManifest, arm: str) -> list[str]:
    """Treated-arm flags: the server given with ``-c`` (works with ``--ignore-user-config``)."""
    return ["-c", f"mcp_servers.{manifest.mcp_name}={codex_server_table(manifest, arm)}"]


def codex_config_toml(manifest: InterventionManifest, arm: str) -> str:
    """``$CODEX_HOME/config.toml`` holding only the server (one arm's wiring)."""
    lines = [
        f"# Treated arms: the intervention '{manifest.id}' {manifest.version} (an MCP server).",
        "# Rendered from its manifest (pairlab.core.intervention_wiring); Codex passes the",
        "# server only the variables named in env_vars.",
        f"[mcp_servers.{manifest.mcp_name}]",
        *(f"{k} = {v}" for k, v in _codex_fields(manifest, arm)),
    ]
    return "\n".join(lines) + "\n"


def claude_arm_env(manifest: InterventionManifest) -> dict[str, str]:
    """Claude Code waits ``MCP_TIMEOUT`` ms for a server's handshake (30 s by default):
    the manifest's startup timeout, so a server that misses it is logged
    ``CONNECT_TIMEOUT`` (``intervention-timeout``)."""
    return {"MCP_TIMEOUT": str(manifest.startup_timeout_s * 1000)}


def codex_arm_env(manifest: InterventionManifest) -> dict[str, str]:
    return {}  # startup_timeout_sec is in the server's table


ARM_WIRING: Final = {"claude-mcp-config": claude_arm_args, "codex-mcp-servers": codex_arm_args}
# the treated arms' environment each wiring adds (the startup timeout where it is a variable)
ARM_ENV: Final = {"claude-mcp-config": claude_arm_env, "codex-mcp-servers": codex_arm_env}


def stamp(
    identity: InterventionIdentity,
    server_name: str | None = None,
    recipes: dict[str, TaskRecipe] | None = None,
    workspace: Literal["copy", "git-repository"] = "copy",
) -> InterventionStamp:
    return InterventionStamp(
        id=identity.id,
        version=identity.version,
        manifest_sha256=identity.manifest_sha256,
        server_name=server_name,
        recipes=recipes or {},
        workspace=workspace,
    )


def wire_profile(profile: RunnerProfile, manifest: InterventionManifest) -> RunnerProfile:
    """``profile`` with ``manifest`` wired into its treated arms, stamped with its identity.

    A profile without ``intervention_wiring`` (the simulator, the CLIs that cannot run
    here) runs a fixed treatment of its own: it takes only the reference intervention,
    and any other is refused. Arms the manifest does not support are dropped (a plan
    asking for one is refused before any episode, ``arm-not-supported``)."""
    identity = intervention_identity(manifest)
    if profile.intervention is not None:  # a bug: wiring twice would silently keep the first
        raise ValueError(f"profile '{profile.client}' is already wired ({profile.intervention.id})")
    if profile.intervention_wiring is None:
        if manifest.id != DEFAULT_INTERVENTION:
            raise InvalidInputError(
                f"profile '{profile.client}' runs a fixed treatment of its own and cannot "
                f"run the intervention '{manifest.id}' (use a real-CLI profile: claude, codex)",
                reason=ReasonCode.ARM_NOT_SUPPORTED,
            )
        return profile.model_copy(
            update={
                "intervention": stamp(
                    identity, manifest.mcp_name, manifest.recipes, manifest.workspace
                )
            }
        )
    if manifest.seed_files:
        raise InvalidInputError(
            f"intervention '{manifest.id}': seed_files are declared but not yet placed by "
            "the episode lifecycle; remove them to run it",
            reason=ReasonCode.INVALID_INTERVENTION,
        )
    generate = ARM_WIRING[profile.intervention_wiring]
    arm_args: dict[str, list[str]] = {}
    arm_env: dict[str, dict[str, str]] = {}
    for arm, args in profile.arm_args.items():
        if INTERVENTION_PLACEHOLDER not in args:
            arm_args[arm] = list(args)
            continue
        wiring = manifest.arm_wiring(arm)
        if wiring is None:
            continue  # unsupported: the arm is not offered
        at = args.index(INTERVENTION_PLACEHOLDER)
        arm_args[arm] = [*args[:at], *generate(manifest, arm), *args[at + 1 :]]
        if wiring.env:
            arm_env[arm] = dict(wiring.env)
    treatment = profile.treatment.model_copy(
        update={
            "env": {
                **profile.treatment.env,
                **ARM_ENV[profile.intervention_wiring](manifest),
                **manifest.env,
            },
            "arm_env": arm_env,
        }
    )
    return profile.model_copy(
        update={
            "arm_args": arm_args,
            "treatment": treatment,
            "intervention": stamp(
                identity, manifest.mcp_name, manifest.recipes, manifest.workspace
            ),
        }
    )


def require_supported_arms(manifest: InterventionManifest, arms: Iterable[str]) -> None:
    """Refuse a plan asking for a treated arm ``manifest`` declares ``unsupported``
    (``arm-not-supported``, exit 2)."""
    missing = [arm for arm in arms if arm in TREATED_ARMS and manifest.arm_wiring(arm) is None]
    if missing:
        raise InvalidInputError(
            f"intervention '{manifest.id}' does not support the arm(s) {', '.join(missing)} "
            f"(supported: baseline, {', '.join(manifest.supported_arms)}); leave them out "
            "with --arms, or give no arms: the baseline and every arm it supports",
            reason=ReasonCode.ARM_NOT_SUPPORTED,
        )


def check_same_intervention(
    run_id: str, recorded: Iterable[EpisodeRecord], wired: InterventionStamp | None
) -> None:
    """Refuse a resume whose intervention is not the one the run's recorded episodes ran:
    the same id with an edited manifest is another intervention (``resume-changed``)."""
    if wired is None:
        return
    ran = {
        (r.intervention_id, r.intervention_manifest_sha256)
        for r in recorded
        if r.intervention_id is not None
    }
    other = sorted(
        f"{i} ({(sha or '')[:12]})" for i, sha in ran - {(wired.id, wired.manifest_sha256)}
    )
    if other:
        raise InvalidInputError(
            f"resume of run {run_id} refused: its episodes ran the intervention "
            f"{', '.join(other)}, not '{wired.id}' ({wired.manifest_sha256[:12]}); was its "
            "manifest edited? Restore it or start a new run",
            reason=ReasonCode.RESUME_CHANGED,
        )


def planned_arms(requested: Sequence[str], offered: Collection[str]) -> list[str]:
    """The arms a run plans. An explicit list is taken as it is (the caller validated it:
    baseline, no repeats; :func:`require_arms` refuses an arm the intervention does not
    support). No arms asked for -- an empty list, the default of ``pairlab eval`` without
    ``--arms`` and of the eval form -- means the baseline and every arm ``offered`` (the
    wired profile's arms: those the intervention supports), in the arms' order.

    The one resolution of that default: ``pairlab eval`` and ``pairlab plan`` before the
    flow, the evidence-eval flow when it plans. The flow freezes the result
    (``settings.json``, ``run.json``), so a resume takes the run's arms, never a new
    resolution (a manifest that since supports more or fewer arms neither widens nor
    narrows the run)."""
    if requested:
        return list(requested)
    return [arm for arm in ARMS if arm == "baseline" or arm in offered]


def planned_treated_arm(requested: str | None, offered: Collection[str]) -> str:
    """A canary's treated arm on an account: the one asked for, else (None, the form's
    default) the widest arm ``offered`` -- full, else retrieval, else optimizer -- so a
    server that supports only the optimizer arm runs it instead of being refused. An arm
    asked for that is not offered is left to the caller's refusal (``arm-not-supported``)."""
    if requested is not None:
        return requested
    supported = [arm for arm in TREATED_ARMS if arm in offered]
    return supported[-1] if supported else TREATED_ARMS[-1]


def require_arms(profile: RunnerProfile, arms: Iterable[str]) -> None:
    """Refuse a plan asking for an arm the wired profile does not offer -- one its
    intervention declares ``unsupported`` (``arm-not-supported``, exit 2), before any
    episode runs."""
    missing = [arm for arm in arms if arm not in profile.arm_args]
    if not missing:
        return
    offered = ", ".join(profile.arm_args)
    what = f"intervention '{profile.intervention.id}'" if profile.intervention else "the profile"
    raise InvalidInputError(
        f"{what} does not support the arm(s) {', '.join(missing)} with profile "
        f"'{profile.client}' (offered: {offered}); leave them out with --arms (the "
        "form's Arms), or give no arms: the baseline and every arm it supports",
        reason=ReasonCode.ARM_NOT_SUPPORTED,
    )


__all__ = [
    "ARM_WIRING",
    "EMPTY_CLAUDE_MCP_CONFIG",
    "INTERVENTION_PLACEHOLDER",
    "TREATED_ARMS",
    "check_same_intervention",
    "claude_arm_args",
    "claude_mcp_config",
    "claude_mcp_config_json",
    "codex_arm_args",
    "codex_config_toml",
    "codex_server_table",
    "planned_arms",
    "planned_treated_arm",
    "require_arms",
    "require_supported_arms",
    "stamp",
    "wire_profile",
]
