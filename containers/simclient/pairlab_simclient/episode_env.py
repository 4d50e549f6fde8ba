"""What one simclient run knows about its episode: ids, arm, paths, clock, seed.

Everything comes from the environment the execution backend builds (helper
interfaces, "Execution"); defaults keep the simulator usable by hand.
"""

from __future__ import annotations

import hashlib
import os
import random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path


def format_ts(moment: datetime) -> str:
    """ISO-8601 UTC with milliseconds and a Z, the shape the real CLIs write."""
    return (
        moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


def parse_ts(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def seeded_random(*parts: str) -> random.Random:
    """A Random seeded by sha256 over the NUL-joined parts (stable across processes)."""
    digest = hashlib.sha256("\0".join(parts).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest, "big"))


def random_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def random_token(rng: random.Random, length: int) -> str:
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    return "".join(rng.choice(alphabet) for _ in range(length))


@dataclass(frozen=True)
class EpisodeEnv:
    seed: str
    episode_id: str
    task_id: str
    arm: str
    home: Path
    workspace: Path
    state_dir: Path | None
    graph_dir: Path | None
    solution_dir: Path | None
    final_answer: str | None
    account_dir: Path | None
    claude_config_dir: Path
    codex_home: Path
    gemini_home: Path
    started_at: datetime
    is_clock_fixed: bool

    def rng(self, purpose: str) -> random.Random:
        """The episode's random stream for one purpose (sha256 of seed, episode id, purpose)."""
        return seeded_random(self.seed, self.episode_id, purpose)


def _path(environ: dict[str, str], name: str) -> Path | None:
    value = environ.get(name)
    return Path(value) if value else None


def read_episode_env(environ: dict[str, str], prompt: str, cwd: str | None) -> EpisodeEnv:
    home = Path(environ.get("HOME") or os.path.expanduser("~"))
    workspace = Path(cwd) if cwd else _path(environ, "PAIRLAB_WORKSPACE") or Path.cwd()
    fixed_now = environ.get("PAIRLAB_SIM_NOW")
    started_at = parse_ts(fixed_now) if fixed_now else datetime.now(UTC)
    prompt_key = hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16]
    return EpisodeEnv(
        seed=environ.get("PAIRLAB_SEED", "0"),
        episode_id=environ.get("PAIRLAB_EPISODE_ID") or f"adhoc:{prompt_key}",
        task_id=environ.get("PAIRLAB_TASK_ID") or f"prompt-{prompt_key}",
        arm=environ.get("TOKEN_OPTIMIZER_EXPERIMENT_ARM") or "baseline",
        home=home,
        workspace=workspace.resolve(),
        state_dir=_path(environ, "PAIRLAB_STATE_DIR"),
        graph_dir=_path(environ, "PAIRLAB_GRAPH_DIR"),
        solution_dir=_path(environ, "PAIRLAB_TASK_SOLUTION"),
        final_answer=environ.get("PAIRLAB_TASK_FINAL_ANSWER") or None,
        account_dir=_path(environ, "PAIRLAB_SIM_ACCOUNT_DIR"),
        claude_config_dir=_path(environ, "CLAUDE_CONFIG_DIR") or home / ".claude",
        codex_home=_path(environ, "CODEX_HOME") or home / ".codex",
        gemini_home=_path(environ, "GEMINI_CLI_HOME") or home,
        started_at=started_at,
        is_clock_fixed=bool(fixed_now),
    )
