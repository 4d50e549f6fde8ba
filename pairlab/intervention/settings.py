"""What the server reads from its environment, validated once at startup.

The episode backends set the ``PAIRLAB_*`` variables (pairlab/adapters/backends/
environment.py); the ``TOKEN_OPTIMIZER_*`` ones are the intervention's own.
Codex hands an MCP server only a few variables unless its config lists more
(``env_vars``), so :data:`PASSED_ENV` is the one list the client configs name.

``TOKEN_OPTIMIZER_TRACE=<file>`` appends every JSON-RPC line, payload text included,
to that file: for debugging and for recording real clients (tests/fixtures/mcp/), never
for an eval whose collected directories are published.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pairlab.core.accounting.ledger_rules import LEDGER_ROWS_FILE
from pairlab.core.errors import InvalidInputError, ReasonCode

ARM_ENV: Final = "TOKEN_OPTIMIZER_EXPERIMENT_ARM"
LEDGER_ENV: Final = "TOKEN_OPTIMIZER_LEDGER"
THRESHOLD_ENV: Final = "TOKEN_OPTIMIZER_PREVIEW_THRESHOLD_TOKENS"
HEAD_ENV: Final = "TOKEN_OPTIMIZER_PREVIEW_HEAD_TOKENS"
TRACE_ENV: Final = "TOKEN_OPTIMIZER_TRACE"
STATE_ENV: Final = "PAIRLAB_STATE_DIR"
WORKSPACE_ROOT_ENV: Final = "PAIRLAB_WORKSPACE_ROOT"
WORKDIR_ENV: Final = "PAIRLAB_WORKSPACE"
EPISODE_ENV: Final = "PAIRLAB_EPISODE_ID"
GRAPH_ENV: Final = "PAIRLAB_GRAPH_DIR"
# Claude Code hands its MCP servers its whole environment, this variable included.
CLAUDE_SESSION_ENV: Final = "CLAUDE_CODE_SESSION_ID"

# Every variable the server (and issue 18's retrieval tools) may read: client configs
# that filter the environment (Codex's ``env_vars``) pass exactly these.
PASSED_ENV: Final = (
    ARM_ENV,
    LEDGER_ENV,
    THRESHOLD_ENV,
    HEAD_ENV,
    TRACE_ENV,
    STATE_ENV,
    WORKSPACE_ROOT_ENV,
    WORKDIR_ENV,
    EPISODE_ENV,
    "PAIRLAB_RUN_ID",
    "PAIRLAB_PAIR_ID",
    "PAIRLAB_TASK_ID",
    "PAIRLAB_SEED",
    GRAPH_ENV,
    "TIKTOKEN_CACHE_DIR",
    "TMPDIR",
)

BASELINE: Final = "baseline"
# The evidence arms plus the canary's candidate (which gets the optimizer's tools).
ARMS: Final = ("baseline", "optimizer", "retrieval", "full", "candidate")
DEFAULT_PREVIEW_THRESHOLD_TOKENS: Final = 600
DEFAULT_PREVIEW_HEAD_TOKENS: Final = 200


@dataclass(frozen=True)
class ServerSettings:
    arm: str
    workspace_root: Path
    workdir: Path  # relative paths are resolved against it
    ledger_path: Path | None  # None only in the baseline (no tools, no rows)
    preview_threshold_tokens: int
    preview_head_tokens: int
    episode_id: str | None
    client_session_id: str | None
    trace_path: Path | None
    pair_id: str | None = None  # the holdout unit: both arms of a pair decide alike
    graph_dir: Path | None = None  # the episode's findings graph (retrieval and full arms)
    state_dir: Path | None = None  # where the evidence log is written

    @property
    def is_treated(self) -> bool:
        return self.arm != BASELINE

    @classmethod
    def from_env(cls, environ: Mapping[str, str], cwd: Path) -> ServerSettings:
        arm = environ.get(ARM_ENV, "").strip() or BASELINE
        if arm not in ARMS:
            raise InvalidInputError(
                f"{ARM_ENV}={arm!r} is not an arm (known: {', '.join(ARMS)})",
                reason=ReasonCode.INVALID_INPUT,
            )
        workdir = Path(environ.get(WORKDIR_ENV) or cwd)
        root = Path(environ.get(WORKSPACE_ROOT_ENV) or workdir)
        ledger = _ledger_path(environ)
        if arm != BASELINE and ledger is None:
            raise InvalidInputError(
                f"arm {arm!r} writes ledger rows but neither {LEDGER_ENV} nor {STATE_ENV} is set",
                reason=ReasonCode.INVALID_INPUT,
            )
        trace = environ.get(TRACE_ENV)
        return cls(
            arm=arm,
            workspace_root=Path(os.path.realpath(root)),
            workdir=Path(os.path.realpath(workdir)),
            ledger_path=ledger,
            preview_threshold_tokens=_positive_int(
                environ, THRESHOLD_ENV, DEFAULT_PREVIEW_THRESHOLD_TOKENS
            ),
            preview_head_tokens=_positive_int(environ, HEAD_ENV, DEFAULT_PREVIEW_HEAD_TOKENS),
            episode_id=environ.get(EPISODE_ENV) or None,
            client_session_id=environ.get(CLAUDE_SESSION_ENV) or None,
            trace_path=Path(trace) if trace else None,
            pair_id=environ.get("PAIRLAB_PAIR_ID") or None,
            graph_dir=Path(environ[GRAPH_ENV]) if environ.get(GRAPH_ENV) else None,
            state_dir=_state_dir(environ, ledger),
        )


def _state_dir(environ: Mapping[str, str], ledger: Path | None) -> Path | None:
    if environ.get(STATE_ENV):
        return Path(environ[STATE_ENV])
    return ledger.parent if ledger is not None else None


def _ledger_path(environ: Mapping[str, str]) -> Path | None:
    if environ.get(LEDGER_ENV):
        return Path(environ[LEDGER_ENV])
    if environ.get(STATE_ENV):
        return Path(environ[STATE_ENV]) / LEDGER_ROWS_FILE
    return None


def _positive_int(environ: Mapping[str, str], name: str, default: int) -> int:
    text = environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise InvalidInputError(
            f"{name}={text!r} is not a positive integer", reason=ReasonCode.INVALID_INPUT
        )
    return value
