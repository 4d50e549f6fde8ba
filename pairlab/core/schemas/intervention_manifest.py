"""The intervention manifest (``interventions/<id>.yaml``): what a treated arm runs.

An intervention is a declared input, never something a runner profile names. One
manifest says what the server is (a stdio or a streamable-HTTP MCP server), how it is
installed (a pinned PyPI requirement with its sha256, installed with uv into an
environment of its own -- never pairlab's -- or a module inside this project), its
command, arguments and environment, the variables it may read from the episode, what
each treated arm gets (an arm it does not support says ``unsupported``), the files it
seeds into a treated HOME or workspace, and how long the CLI waits for its handshake.
Each real CLI's treated-arm wiring is generated from it (``core/intervention_wiring``).

Rules enforced here, before anything runs (each refusal is an
:class:`InvalidInputError`, exit 2, with its own reason code):

* unknown fields anywhere -> ``intervention-unknown-field``;
* no command (missing or empty) -> ``intervention-missing-command``;
* a PyPI requirement that is not ``name==version`` or lacks a sha256 ->
  ``intervention-unpinned-requirement``;
* a ``lock`` path that is absolute or leaves the manifest's directory, or a ``lock``
  on a module install -> ``invalid-intervention`` (whether the file exists and pins
  the requirement is checked by the installer, ``adapters/intervention_install``);
* anything else malformed (a bad id, an env variable Codex would not pass because it
  is missing from ``env_vars``, every arm unsupported, ...) -> ``invalid-intervention``.

:func:`manifest_sha256` is the sha256 of the manifest's canonical content (the
validated model as sorted, compact JSON), so formatting and comments do not change it
and any change of meaning does. Records, manifests and cohort keys carry
:class:`InterventionIdentity` (id, version, that hash).

``recipes`` (optional, part of schema version 1) declares per catalog task which of the
server's tool calls replace which built-in step of the scripted model
(``core/schemas/usage_recipe``; an unknown placeholder is ``invalid-intervention``);
whether the tools exist and the arguments fit is checked against the server's real
``tools/list`` (``core/recipe_check``).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final, Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.base import StrictModel
from pairlab.core.schemas.usage_recipe import TaskRecipe

TreatedArm = Literal["optimizer", "retrieval", "full"]
TREATED_ARMS: Final[tuple[TreatedArm, ...]] = ("optimizer", "retrieval", "full")
UNSUPPORTED: Final = "unsupported"
DEFAULT_INTERVENTION: Final = "reference"

_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
# PEP 508 name (extras allowed) pinned with == to one exact version: no ranges, no *, no URL
_PINNED = re.compile(
    r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(?:\[[A-Za-z0-9._,-]+\])?"
    r"==(?P<version>[A-Za-z0-9][A-Za-z0-9.+!_-]*)$"
)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


_DEBIAN = re.compile(r"^[a-z0-9][a-z0-9.+-]+$")


class Install(StrictModel):
    """How the server gets onto an episode's PATH: exactly one of ``pypi`` (a pinned
    ``name==version`` with the sha256 of the distribution uv installs, into the
    intervention's own environment) or ``module`` (a module inside this project, which
    ships with pairlab and in its client images). ``lock`` (pypi only) is the fully
    hashed requirements file, relative to the manifest's directory, that the installer
    hands ``uv pip install --require-hashes``; a pypi intervention without one can be
    validated and planned but not installed. ``debian`` (pypi only) names the Debian
    packages the server needs from the system (e.g. ``git`` for GitPython): installed with
    apt into its Docker image; the local backend relies on the host having them."""

    pypi: str | None = None
    sha256: str | None = None
    module: str | None = None
    lock: str | None = None
    debian: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_source(self) -> Install:
        if (self.pypi is None) == (self.module is None):
            raise ValueError("install: give exactly one of 'pypi' or 'module'")
        if self.module is not None:
            if self.sha256 is not None or self.lock is not None or self.debian:
                raise ValueError(
                    "install: 'sha256', 'lock' and 'debian' belong to a 'pypi' requirement"
                )
            if not _MODULE.match(self.module):
                raise ValueError(f"install.module: {self.module!r} is not a dotted module name")
            return self
        if not _PINNED.match(self.pypi or ""):
            raise _Unpinned(
                f"install.pypi: {self.pypi!r} is not pinned to one version (write name==version)"
            )
        if self.sha256 is None or not _SHA256.match(self.sha256):
            raise _Unpinned(
                "install.sha256: a pypi requirement needs the sha256 (64 lowercase hex "
                "digits) of the distribution it installs"
            )
        bad = [name for name in self.debian if not _DEBIAN.match(name)]
        if bad or len(set(self.debian)) != len(self.debian):
            raise ValueError(f"install.debian: distinct Debian package names only (bad: {bad})")
        if self.lock is not None:
            pure = PurePosixPath(self.lock)
            if not self.lock or pure.is_absolute() or ".." in pure.parts:
                raise ValueError(
                    f"install.lock: {self.lock!r} must be a path relative to the manifest's "
                    "directory that stays inside it"
                )
        return self

    @property
    def package(self) -> str | None:
        """The requirement's distribution name (pypi installs only)."""
        found = _PINNED.match(self.pypi or "")
        return found.group("name") if found else None

    @property
    def pinned_version(self) -> str | None:
        """The requirement's one version (pypi installs only)."""
        found = _PINNED.match(self.pypi or "")
        return found.group("version") if found else None


class SeedFile(StrictModel):
    """A file the treated arms get before the CLI starts (e.g. an instruction file),
    written at ``path`` relative to the episode's HOME or workspace."""

    into: Literal["home", "workspace"]
    path: str = Field(min_length=1)
    text: str

    @field_validator("path")
    @classmethod
    def _relative_inside(cls, value: str) -> str:
        pure = PurePosixPath(value)
        if pure.is_absolute() or ".." in pure.parts:
            raise ValueError(f"seed file path {value!r} must be relative and stay inside")
        return value


class ArmWiring(StrictModel):
    """What one supported treated arm adds: arguments after the server's own ``args``,
    and variables set in that arm's environment (like the manifest's ``env``)."""

    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)


class InterventionManifest(StrictModel):
    """One intervention, version 1 of the manifest schema (``schema_version: 1``)."""

    schema_version: Literal[1] = 1
    id: str
    version: str = Field(min_length=1)
    description: str = Field(min_length=10)
    kind: Literal["stdio", "streamable-http"]
    # the name the CLIs list the server under (mcp__<server_name>__<tool>); default: id
    server_name: str | None = None
    install: Install
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    # streamable-http only: where the CLI connects once the command has started the server
    url: str | None = None
    # set in the treated arms' environment; the server inherits them (Codex passes only the
    # names in env_vars, so each must be listed there)
    env: dict[str, str] = Field(default_factory=dict)
    # variables the server may read from the episode's environment
    env_vars: list[str] = Field(default_factory=list)
    arms: dict[TreatedArm, ArmWiring | Literal["unsupported"]]
    seed_files: list[SeedFile] = Field(default_factory=list)
    startup_timeout_s: int = Field(ge=1, le=600)
    # what the episode's workspace is, in every arm of a run with this intervention: a copy
    # of the task's fixture, or that copy made a git repository (one commit) for servers
    # that refuse a directory that is not a VCS root (adapters/backends/workspace_repository)
    workspace: Literal["copy", "git-repository"] = "copy"
    # per catalog task id: which of its tool calls replace which built-in step of the
    # scripted model (core/schemas/usage_recipe); a task without one measures the floor
    recipes: dict[str, TaskRecipe] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError(f"id {value!r}: lowercase letters, digits and '-' (at most 63)")
        return value

    @field_validator("server_name")
    @classmethod
    def _server_name_shape(cls, value: str | None) -> str | None:
        if value is not None and not _SERVER_NAME.match(value):
            raise ValueError(f"server_name {value!r}: letters, digits, '_' and '-' only")
        return value

    @field_validator("recipes")
    @classmethod
    def _recipe_tasks(cls, value: dict[str, TaskRecipe]) -> dict[str, TaskRecipe]:
        bad = [task for task in value if not _ID.match(task)]
        if bad:
            raise ValueError(f"recipes: keys are catalog task ids (bad: {bad})")
        return value

    @field_validator("env_vars")
    @classmethod
    def _env_names(cls, value: list[str]) -> list[str]:
        bad = [name for name in value if not _ENV_NAME.match(name)]
        if bad or len(set(value)) != len(value):
            raise ValueError(f"env_vars: names must be distinct variable names (bad: {bad})")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> InterventionManifest:
        missing = [arm for arm in TREATED_ARMS if arm not in self.arms]
        if missing:
            raise ValueError(
                f"arms: declare every treated arm, '{UNSUPPORTED}' where the intervention "
                f"has no such layer (missing: {', '.join(missing)})"
            )
        if not self.supported_arms:
            raise ValueError("arms: every treated arm is unsupported")
        if (self.kind == "streamable-http") != (self.url is not None):
            raise ValueError("url: required for a streamable-http server, absent for stdio")
        set_env = set(self.env).union(*(w.env for w in self.arms.values() if w != UNSUPPORTED))
        unlisted = sorted(set_env - set(self.env_vars))
        if unlisted:
            raise ValueError(
                f"env: {', '.join(unlisted)} not in env_vars (Codex would not pass them)"
            )
        return self

    @property
    def mcp_name(self) -> str:
        """The server's name in the CLIs' configs."""
        return self.server_name or self.id

    @property
    def supported_arms(self) -> tuple[TreatedArm, ...]:
        return tuple(arm for arm in TREATED_ARMS if self.arms.get(arm, UNSUPPORTED) != UNSUPPORTED)

    def arm_wiring(self, arm: str) -> ArmWiring | None:
        """The arm's wiring; None when the arm is not a supported treated arm."""
        wiring = self.arms.get(arm)  # type: ignore[call-overload]
        return wiring if isinstance(wiring, ArmWiring) else None


class _Unpinned(ValueError):
    """An install requirement that is not reproducible (raised inside validation)."""


@dataclass(frozen=True)
class InterventionIdentity:
    """What a run, an episode record and a cohort key say about the intervention."""

    id: str
    version: str
    manifest_sha256: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "version": self.version, "manifestSha256": self.manifest_sha256}


def canonical_json(manifest: InterventionManifest) -> str:
    """The manifest's canonical content: every field (defaults included), keys sorted,
    no whitespace -- what :func:`manifest_sha256` hashes. ``recipes`` (empty) and
    ``workspace`` (``copy``) are left out at their defaults, so a manifest without them
    hashes as it did before the fields existed."""
    data = manifest.model_dump(mode="json")
    if not data.get("recipes"):
        data.pop("recipes", None)
    if data.get("workspace") == "copy":
        data.pop("workspace", None)
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def manifest_sha256(manifest: InterventionManifest) -> str:
    return hashlib.sha256(canonical_json(manifest).encode("utf-8")).hexdigest()


def intervention_identity(manifest: InterventionManifest) -> InterventionIdentity:
    return InterventionIdentity(manifest.id, manifest.version, manifest_sha256(manifest))


def _reason_for(error: ErrorDetails) -> ReasonCode:
    loc = tuple(error["loc"])
    ctx = error.get("ctx")
    if error["type"] == "extra_forbidden":
        return ReasonCode.INTERVENTION_UNKNOWN_FIELD
    if loc[:1] == ("command",):
        return ReasonCode.INTERVENTION_MISSING_COMMAND
    if isinstance(ctx, dict) and isinstance(ctx.get("error"), _Unpinned):
        return ReasonCode.INTERVENTION_UNPINNED
    return ReasonCode.INVALID_INTERVENTION


_PRECEDENCE: Final = (
    ReasonCode.INTERVENTION_UNKNOWN_FIELD,
    ReasonCode.INTERVENTION_MISSING_COMMAND,
    ReasonCode.INTERVENTION_UNPINNED,
    ReasonCode.INVALID_INTERVENTION,
)


def parse_manifest(data: object, source: str = "<intervention>") -> InterventionManifest:
    """Validate ``data``; a refusal names the field and carries the most specific reason
    (unknown field, then missing command, then unpinned requirement, then the rest)."""
    if not isinstance(data, dict):
        raise InvalidInputError(
            f"{source}: an intervention manifest must be a mapping",
            reason=ReasonCode.INVALID_INTERVENTION,
        )
    try:
        return InterventionManifest.model_validate(data)
    except ValidationError as exc:
        errors = [(_reason_for(e), e) for e in exc.errors()]
        reason, first = min(errors, key=lambda pair: _PRECEDENCE.index(pair[0]))
        field = ".".join(str(p) for p in first["loc"]) or "<manifest>"
        raise InvalidInputError(
            f"{source}: intervention refused: field '{field}': {first['msg']}", reason=reason
        ) from exc


def load_manifest(path: Path) -> InterventionManifest:
    """Read and validate one manifest file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidInputError(
            f"{path}: cannot read intervention manifest: {exc}",
            reason=ReasonCode.INPUT_READ_FAILED,
        ) from exc
    return parse_manifest(data, str(path))


__all__ = [
    "DEFAULT_INTERVENTION",
    "TREATED_ARMS",
    "UNSUPPORTED",
    "ArmWiring",
    "Install",
    "InterventionIdentity",
    "InterventionManifest",
    "SeedFile",
    "TreatedArm",
    "canonical_json",
    "intervention_identity",
    "load_manifest",
    "manifest_sha256",
    "parse_manifest",
]
