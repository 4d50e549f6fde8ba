"""The episode's command line, environment and HOME seeding, shared by every backend.

Both backends build the agent's argv and environment here so the local and
Docker paths cannot drift apart. The environment is built from nothing: the
allowlisted host variables, the profile's static env, the treatment env and the
treated arm's own env (treated arms only; filled from the intervention manifest), the pairlab identity variables and the declared secrets -- never the
whole parent environment.

Precedence (later wins): fresh HOME and client config dirs < allowlisted host
variables < profile.env < treatment.env < spec.extra_env < pairlab identity
variables. A profile that allowlists ``HOME`` (or a config dir) therefore hands
the agent the host's config: the backend does what the profile says, and the
isolation probe of ``pairlab certify`` is what catches such a profile.

Profile and treatment env values may name this episode's directories with
``{home}``, ``{state}``, ``{graph}``, ``{workspace}`` and ``{tmp}`` (a fresh
temporary directory inside the episode HOME; they differ between backends), e.g.
Copilot's OpenTelemetry file path under the episode HOME. ``{emulatorUrl}`` (in args
and env) is the episode's base URL on the provider emulator a run started for a
profile with ``endpoint: emulator`` (``EpisodeSpec.endpoint_url``, as the agent
reaches it). ``root_env`` is added only when the agent runs as root.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pairlab.adapters.backends.base import EpisodeSpec
from pairlab.adapters.backends.finding_seeds import GRAPH_ARMS, seed_graph
from pairlab.core.errors import ExecutionError, ReasonCode
from pairlab.core.schemas.profile import INTERVENTION_PLACEHOLDER

_PLACEHOLDER = re.compile(r"\{(prompt|workspace|arm|taskId|pairId|model|emulatorUrl)\}")

# Config dirs every client reads, pointed into the fresh HOME (CLIENTS.md).
CLIENT_CONFIG_SUBDIRS = (".claude", ".codex", ".gemini", ".copilot")
# The episode's own temporary directory ({tmp}), inside its HOME.
EPISODE_TMP_SUBDIR = ".tmp"
# Placeholders a profile's env values may use: where this episode's directories are
# (which differ between backends). Anything else in braces is left as written.
_ENV_PLACEHOLDER = re.compile(r"\{(home|state|graph|workspace|tmp|emulatorUrl)\}")
EMULATOR_PLACEHOLDER = "{emulatorUrl}"


def _endpoint_url(spec: EpisodeSpec) -> str:
    if spec.endpoint_url is None:
        raise ExecutionError(
            f"profile '{spec.profile.client}' talks to the provider emulator ({EMULATOR_PLACEHOLDER}) "
            "but this episode has no emulator endpoint: run it with `pairlab eval`, "
            "`pairlab episode run` or `pairlab certify`, which start one",
            reason=ReasonCode.INVALID_PROFILE,
        )
    return spec.endpoint_url


@dataclass(frozen=True)
class EpisodePaths:
    """Paths as the agent sees them (host paths locally, container paths in Docker)."""

    workspace_root: str
    workdir: str
    home: str
    graph: str
    state: str
    solution: str | None
    account: str | None


def build_argv(spec: EpisodeSpec, workdir: str) -> list[str]:
    """command + arm args + args with placeholders filled in one pass.

    Arm args come before ``args`` (which carry ``{prompt}``). With no model, a
    part holding ``{model}`` is dropped together with the option flag before it
    (``--model {model}`` disappears rather than passing an empty model).
    """
    profile = spec.profile
    if spec.arm not in profile.arm_args:
        raise ExecutionError(
            f"profile '{profile.client}' has no arm_args for arm '{spec.arm}'",
            reason=ReasonCode.INVALID_PROFILE,
        )
    if INTERVENTION_PLACEHOLDER in profile.arm_args[spec.arm]:
        raise ExecutionError(
            f"profile '{profile.client}': arm '{spec.arm}' holds an unwired "
            f"{INTERVENTION_PLACEHOLDER} (load profiles with pairlab.adapters.profiles, "
            "which wires the run's intervention)",
            reason=ReasonCode.INVALID_PROFILE,
        )
    parts = [*profile.command, *profile.arm_args[spec.arm], *profile.args]
    if spec.model is None:
        kept: list[str] = []
        for part in parts:
            if "{model}" in part:
                if kept and kept[-1].startswith("-") and "=" not in kept[-1]:
                    kept.pop()
                continue
            kept.append(part)
        parts = kept
    values = {
        "prompt": spec.prompt,
        "workspace": workdir,
        "arm": spec.arm,
        "taskId": spec.task_id,
        "pairId": spec.pair_id,
        "model": spec.model or "",
    }
    if any(EMULATOR_PLACEHOLDER in part for part in parts):
        values["emulatorUrl"] = _endpoint_url(spec)
    return [_PLACEHOLDER.sub(lambda m: values[m.group(1)], part) for part in parts]


def build_env(
    spec: EpisodeSpec,
    paths: EpisodePaths,
    host_env: Mapping[str, str],
    *,
    skip_host: frozenset[str] = frozenset(),
    as_root: bool = False,
) -> tuple[dict[str, str], dict[str, str]]:
    """Return ``(recorded_env, secret_env)``; only the first may ever be written anywhere."""
    profile = spec.profile
    env: dict[str, str] = {
        "HOME": paths.home,
        "CLAUDE_CONFIG_DIR": f"{paths.home}/.claude",
        "CODEX_HOME": f"{paths.home}/.codex",
        "GEMINI_CLI_HOME": paths.home,
    }
    for name in profile.env_allowlist:
        if name in host_env and name not in skip_host and name not in profile.secrets:
            env[name] = host_env[name]
    places = {"home": paths.home, "state": paths.state, "graph": paths.graph}
    places["workspace"] = paths.workdir
    places["tmp"] = f"{paths.home}/{EPISODE_TMP_SUBDIR}"

    def place(name: str) -> str:
        return _endpoint_url(spec) if name == "emulatorUrl" else places[name]

    def expand(values: Mapping[str, str]) -> dict[str, str]:
        return {k: _ENV_PLACEHOLDER.sub(lambda m: place(m.group(1)), v) for k, v in values.items()}

    env.update(expand(profile.env))
    if as_root:
        env.update(expand(profile.root_env))
    if spec.is_treated:
        env.update(expand(profile.treatment.env))
        env.update(expand(profile.treatment.arm_env.get(spec.arm, {})))
    env.update(spec.extra_env)
    env.update(
        {
            "TOKEN_OPTIMIZER_EXPERIMENT_ARM": spec.arm,
            "PAIRLAB_RUN_ID": spec.run_id,
            "PAIRLAB_EPISODE_ID": spec.episode_id,
            "PAIRLAB_PAIR_ID": spec.pair_id,
            "PAIRLAB_TASK_ID": spec.task_id,
            "PAIRLAB_SEED": str(spec.seed),
            "PAIRLAB_GRAPH_DIR": paths.graph,
            "PAIRLAB_STATE_DIR": paths.state,
            "PAIRLAB_WORKSPACE": paths.workdir,
            "PAIRLAB_WORKSPACE_ROOT": paths.workspace_root,
        }
    )
    if spec.model is not None:
        env["PAIRLAB_MODEL"] = spec.model
    if paths.solution is not None:
        env["PAIRLAB_TASK_SOLUTION"] = paths.solution
        if spec.final_answer:
            env["PAIRLAB_TASK_FINAL_ANSWER"] = spec.final_answer
    if paths.account is not None:
        env["PAIRLAB_SIM_ACCOUNT_DIR"] = paths.account
    secrets = {name: host_env[name] for name in profile.secrets if name in host_env}
    return env, secrets


def workspace_subdir(spec: EpisodeSpec) -> str:
    """The task's working directory relative to the workspace root, validated."""
    sub = Path(spec.workspace_subdir)
    if sub.is_absolute() or ".." in sub.parts:
        raise ExecutionError(
            f"workspace '{spec.workspace_subdir}' must be a relative path inside the fixture",
            reason=ReasonCode.INVALID_CATALOG,
        )
    return sub.as_posix()


def seed_home(spec: EpisodeSpec, home: Path) -> None:
    """Create the client config dirs and ``{tmp}``; treated arms also get the profile's home seed."""
    for sub in (*CLIENT_CONFIG_SUBDIRS, EPISODE_TMP_SUBDIR):
        (home / sub).mkdir(parents=True, exist_ok=True)
    seed = spec.profile.treatment.home_seed
    if not spec.is_treated or seed is None:
        return
    seed_dir = Path(seed)
    if not seed_dir.is_absolute() or not seed_dir.is_dir():
        raise ExecutionError(
            f"treatment.home_seed '{seed}' is not an existing absolute directory "
            "(load profiles with pairlab.adapters.profiles, which resolves it)",
            reason=ReasonCode.INVALID_PROFILE,
        )
    shutil.copytree(seed_dir, home, symlinks=True, dirs_exist_ok=True)


def seed_graph_dir(spec: EpisodeSpec, graph: Path, workspace_root: Path, workdir: Path) -> None:
    """Plant the episode's findings graph (retrieval and full arms only; issue 18)."""
    seed = spec.graph_seed
    if seed is None or spec.arm not in GRAPH_ARMS:
        return
    seed_graph(
        graph,
        workspace_root,
        workdir,
        seed.findings,
        holdout_share=seed.holdout_share,
        holdout_seed=seed.holdout_seed,
        carried=seed.carried,
    )
