"""The execution-backend contract (DESIGN 3) shared by the local and Docker backends.

An episode goes ``prepare -> run -> (exec_in_workspace for grading) -> collect ->
cleanup``. Agent failures (non-zero exit, crash, timeout, OOM) are *values* in
:class:`RunOutcome`; only infrastructure the caller cannot continue from raises
(:class:`~pairlab.core.errors.ExecutionError`,
:class:`~pairlab.core.errors.EnvironmentUnavailable`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from pairlab.core.schemas.catalog import SeedFinding
from pairlab.core.schemas.profile import RunnerProfile

# Each captured stream is kept up to this many bytes in memory; the rest is
# drained and counted, and the outcome says it was truncated.
STREAM_CAP_BYTES = 8 * 1024 * 1024
# Seconds between SIGTERM and SIGKILL when an episode is stopped.
KILL_GRACE_S = 2.0
BASELINE_ARM = "baseline"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GraphSeed(_Model):
    """What the episode's findings graph starts with (retrieval and full arms; issue 18)."""

    findings: list[SeedFinding] = Field(default_factory=list)
    holdout_share: float = Field(default=0.5, ge=0, le=1)
    holdout_seed: str = "0"
    carried: Path | None = None  # a frozen graph file carried from a harvest session


class EpisodeSpec(_Model):
    """Everything needed to run one episode; built by the flow (or `pairlab episode run`)."""

    run_id: str = Field(min_length=1)
    episode_id: str = Field(min_length=1)
    pair_id: str = Field(min_length=1)
    task_id: str = Field(min_length=1)
    arm: str = Field(min_length=1)
    prompt: str
    profile: RunnerProfile
    fixture_dir: Path
    workspace_subdir: str = "."
    solution_dir: Path | None = None
    final_answer: str | None = (
        None  # simulator only (with solution_dir): what a correct agent answers
    )
    model: str | None = None
    timeout_s: float = Field(gt=0)
    keep_workspace: bool = False
    seed: int = 0
    extra_env: dict[str, str] = Field(default_factory=dict)
    sim_account_dir: Path | None = None
    # the episode's base URL on the provider emulator, as the agent reaches it ({emulatorUrl})
    endpoint_url: str | None = None
    graph_seed: GraphSeed | None = None

    @property
    def is_treated(self) -> bool:
        return self.arm != BASELINE_ARM


class PreparedEpisode(_Model):
    """A prepared episode: where its state lives on this backend.

    ``env`` holds the recorded (non-secret) environment; secret *values* are
    never stored here, only their names in ``secret_names``.
    """

    spec: EpisodeSpec
    backend: str
    argv: list[str]
    env: dict[str, str]
    secret_names: list[str]
    workdir: str  # where the agent runs (inside the container for Docker)
    root: Path | None = None  # local: the episode's temporary root
    volumes: dict[str, str] = Field(default_factory=dict)  # docker: role -> volume name
    container_id: str | None = None  # docker: the episode's (created, not yet started) container
    mounts: dict[str, str] = Field(default_factory=dict)  # role -> path the agent sees


class RunOutcome(_Model):
    exit_code: int | None
    timed_out: bool = False
    oom_killed: bool = False
    crashed: bool = False  # the process ended abnormally (non-zero exit or killed by a signal)
    error: str | None = None  # could not start / infrastructure detail
    latency_ms: float | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False


class CollectedFile(_Model):
    path: str  # relative to CollectedFiles.dest, POSIX separators
    size_bytes: int
    sha256: str


class CollectedFiles(_Model):
    dest: Path
    files: list[CollectedFile]

    def paths(self, prefix: str = "") -> list[Path]:
        return [self.dest / f.path for f in self.files if f.path.startswith(prefix)]


@runtime_checkable
class ExecutionBackend(Protocol):
    name: str

    def prepare(self, spec: EpisodeSpec) -> PreparedEpisode: ...

    def run(self, prepared: PreparedEpisode) -> RunOutcome: ...

    def exec_in_workspace(
        self, prepared: PreparedEpisode, argv: list[str], timeout_s: float
    ) -> RunOutcome: ...

    def collect(self, prepared: PreparedEpisode, dest: Path) -> CollectedFiles: ...

    def cleanup(self, prepared: PreparedEpisode) -> None: ...


BackendName = Literal["local", "docker"]
