"""Runner profile (DESIGN 5.2): how to start one client CLI.

A profile without baseline arm args, or without a documented and supplied
baseline isolation, is refused with an error naming the field: an uncontrolled
baseline would turn the user's installed hooks and MCP servers into "savings".
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.base import StrictModel
from pairlab.core.schemas.usage_recipe import EpisodeRecipe, TaskRecipe


class IsolationFlag(StrictModel):
    """One isolation flag of the baseline: the consecutive ``args`` of ``arm_args.baseline``
    that make it up, and what it is meant to strip. ``pairlab certify`` re-runs the
    baseline without each declared flag to show which planted items it alone keeps out."""

    args: list[str] = Field(min_length=1)
    strips: str = Field(min_length=3)

    @property
    def name(self) -> str:
        return " ".join(repr(a) if not a or " " in a else a for a in self.args)


class BaselineIsolation(StrictModel):
    description: str = Field(min_length=10)
    fresh_home: bool
    strips: list[str] = Field(min_length=1)
    probe: str = Field(min_length=1)
    flags: list[IsolationFlag] = Field(default_factory=list)

    @field_validator("fresh_home")
    @classmethod
    def _home_must_be_fresh(cls, value: bool) -> bool:
        if not value:
            raise ValueError("a baseline must start with a fresh HOME")
        return value


CertificationLevel = Literal["live-local", "simulator", "unavailable"]


class Certification(StrictModel):
    """How ``pairlab certify`` can certify this profile on this machine.

    ``live-local``: the real CLI runs here (bundled in a pinned wheel) against the provider
    emulator, and its isolation is proven from the emulator's request log and planted
    side-effect markers. ``simulator``: the simulated client, whose startup report is
    observed directly. ``unavailable``: the CLI cannot run here; ``reason`` says why
    (certify prints it and never reports the profile as passed)."""

    level: CertificationLevel
    reason: str | None = None

    @model_validator(mode="after")
    def _reason_when_unavailable(self) -> Certification:
        if self.level == "unavailable" and not (self.reason and len(self.reason) >= 10):
            raise ValueError("an unavailable profile must say why (certification.reason)")
        return self


class Treatment(StrictModel):
    home_seed: str | None = None  # directory (relative to the profile) copied into a treated HOME
    env: dict[str, str] = Field(default_factory=dict)
    # per treated arm, added after env (filled from an intervention manifest's arm wiring)
    arm_env: dict[str, dict[str, str]] = Field(default_factory=dict)
    # directories put first on a treated arm's PATH (both backends): an installed pypi
    # intervention's path/ dir, holding only its command, a link into its environment's
    # bin (adapters/intervention_install); never written in a profile file
    path_prepend: list[str] = Field(default_factory=list)


class InterventionStamp(StrictModel):
    """The intervention a loaded profile's treated arms run (set by
    ``core.intervention_wiring.wire_profile``; never written in a profile file)."""

    id: str
    version: str
    manifest_sha256: str
    # the name the CLIs list its server under (the manifest's mcp_name), to judge whether a
    # treated episode loaded it (core/intervention_health); never serialized (the manifest
    # hash already names it), so stored stamps read back without it
    server_name: str | None = Field(default=None, exclude=True)
    # its usage recipes per catalog task (the manifest's ``recipes``), which the run's
    # emulator registration hands a treated episode's scripted model; never serialized
    recipes: dict[str, TaskRecipe] = Field(default_factory=dict, exclude=True)
    # the manifest's ``workspace``: ``git-repository`` makes every arm's workspace a git
    # repository of the fixture (adapters/backends/workspace_repository); never serialized
    workspace: Literal["copy", "git-repository"] = Field(default="copy", exclude=True)

    def episode_recipe(self, task_id: str, arm: str) -> EpisodeRecipe | None:
        """The recipe a ``task_id`` episode of ``arm`` follows: None for the baseline, for
        a task without one and when the server's name is unknown."""
        recipe = self.recipes.get(task_id)
        if arm == "baseline" or recipe is None or self.server_name is None:
            return None
        return EpisodeRecipe(server=self.server_name, recipe=recipe)


# The element of a treated arm's args the intervention's generated wiring replaces.
INTERVENTION_PLACEHOLDER = "{intervention}"


class UsageSource(StrictModel):
    reader: Literal["claude", "codex", "gemini", "copilot"]
    paths: list[str] = Field(min_length=1)  # globs relative to the episode HOME


class QuotaSource(StrictModel):
    probe: str = Field(min_length=1)
    options: dict[str, str] = Field(default_factory=dict)
    # the provider emulator's charge log of the run's account (set by a run against the
    # emulator): concurrent use of the account is then ground truth, not an assertion
    charge_log_url: str | None = None


class Resources(StrictModel):
    cpus: float = Field(default=1.0, gt=0)
    memory_mb: int = Field(default=1024, ge=16)
    pids: int = Field(default=256, ge=8)


class RunnerProfile(StrictModel):
    schema_version: Literal[1] = 1
    client: str = Field(min_length=1)
    version: str | None = None
    image: str = Field(min_length=1)
    dockerfile: str | None = None
    command: list[str] = Field(min_length=1)
    version_command: list[str] | None = None
    args: list[str] = Field(default_factory=list)
    # env for every arm (values recorded); {home} {state} {graph} {workspace} name the episode's dirs
    env: dict[str, str] = Field(default_factory=dict)
    mount_solution: bool = False  # simulator only: expose the task's reference solution read-only
    arm_args: dict[str, list[str]]
    baseline_isolation: BaselineIsolation
    treatment: Treatment = Field(default_factory=Treatment)
    env_allowlist: list[str] = Field(default_factory=lambda: ["PATH", "LANG", "LC_ALL", "TZ"])
    secrets: list[str] = Field(default_factory=list)
    usage: UsageSource
    quota: QuotaSource
    timeout_s: float = Field(default=600, gt=0)
    resources: Resources = Field(default_factory=Resources)
    network: str = "none"
    certification: Certification
    # "emulator": every episode talks to the provider emulator a run starts ({emulatorUrl}
    # in args/env is the episode's base URL; declared secrets get the emulator's dummy
    # credentials, never the host's); None: the CLI's own provider.
    endpoint: Literal["emulator"] | None = None
    model: str | None = None  # the model asked for when a run names none ({model})
    # added to env only when the agent runs as root (the local backend under root)
    root_env: dict[str, str] = Field(default_factory=dict)
    # how the treated arms' {intervention} element is generated from a manifest
    # (core/intervention_wiring.py); None: a fixed treatment of the profile's own
    intervention_wiring: Literal["claude-mcp-config", "codex-mcp-servers"] | None = None
    # the wired intervention's identity: set on loading, refused in a profile file
    intervention: InterventionStamp | None = None

    @model_validator(mode="after")
    def _baseline_args_present(self) -> RunnerProfile:
        baseline = self.arm_args.get("baseline")
        if not baseline:
            raise ValueError("arm_args.baseline is required and must not be empty")
        for flag in self.baseline_isolation.flags:
            if not _contains_run(baseline, flag.args):
                raise ValueError(
                    f"baseline_isolation.flags: {flag.name} is not in arm_args.baseline"
                )
        return self

    @model_validator(mode="after")
    def _placeholder_where_wired(self) -> RunnerProfile:
        """With ``intervention_wiring``, each treated arm holds ``{intervention}`` once and
        the baseline never; without it, or once wired (``intervention`` set), no arm does."""
        unwired = self.intervention_wiring is not None and self.intervention is None
        for arm, args in self.arm_args.items():
            count = args.count(INTERVENTION_PLACEHOLDER)
            expected = int(unwired and arm != "baseline")
            if count != expected:
                raise ValueError(
                    f"arm '{arm}': {INTERVENTION_PLACEHOLDER} must appear {expected} time(s) "
                    f"with intervention_wiring {self.intervention_wiring}, found {count}"
                )
        return self


def _contains_run(args: list[str], run: list[str]) -> bool:
    return any(args[i : i + len(run)] == run for i in range(len(args) - len(run) + 1))


def without_run(args: list[str], run: list[str]) -> list[str]:
    """``args`` with the first occurrence of the consecutive ``run`` removed."""
    for i in range(len(args) - len(run) + 1):
        if args[i : i + len(run)] == run:
            return [*args[:i], *args[i + len(run) :]]
    return list(args)


def _reason_for(loc: tuple[int | str, ...], msg: str) -> ReasonCode:
    if (loc and loc[0] == "baseline_isolation") or "baseline_isolation.flags" in msg:
        return ReasonCode.MISSING_BASELINE_ISOLATION
    if (loc and loc[0] == "arm_args") or "arm_args.baseline" in msg:
        return ReasonCode.MISSING_BASELINE_ARGS
    return ReasonCode.INVALID_PROFILE


def parse_profile(data: object, source: str = "<profile>") -> RunnerProfile:
    if not isinstance(data, dict):
        raise InvalidInputError(
            f"{source}: a runner profile must be a mapping", reason=ReasonCode.INVALID_PROFILE
        )
    if "intervention" in data:
        raise InvalidInputError(
            f"{source}: profile refused: field 'intervention': a profile names no "
            "intervention (pick one with --intervention; interventions/<id>.yaml)",
            reason=ReasonCode.INVALID_PROFILE,
        )
    try:
        return RunnerProfile.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # Report a baseline-control problem before any other: it is why a profile is unsafe.
        first = next(
            (
                e
                for e in errors
                if _reason_for(tuple(e["loc"]), e["msg"]) != ReasonCode.INVALID_PROFILE
            ),
            errors[0],
        )
        loc = tuple(first["loc"])
        field = ".".join(str(p) for p in loc) or "arm_args.baseline"
        if loc == ("arm_args",):  # the whole mapping is missing or not a mapping
            field = "arm_args.baseline"
        arm_args = data.get("arm_args")
        if _reason_for(loc, first["msg"]) == ReasonCode.INVALID_PROFILE and not (
            isinstance(arm_args, dict) and arm_args.get("baseline")
        ):
            # the model check of arm_args.baseline never ran: other fields failed first
            raise InvalidInputError(
                f"{source}: profile refused: field 'arm_args.baseline': "
                "arm_args.baseline is required and must not be empty",
                reason=ReasonCode.MISSING_BASELINE_ARGS,
            ) from exc
        raise InvalidInputError(
            f"{source}: profile refused: field '{field}': {first['msg']}",
            reason=_reason_for(loc, first["msg"]),
        ) from exc


def load_profile(path: Path) -> RunnerProfile:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidInputError(
            f"{path}: cannot read profile: {exc}", reason=ReasonCode.INPUT_READ_FAILED
        ) from exc
    return parse_profile(data, str(path))
