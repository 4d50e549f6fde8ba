"""A run's provider-limited episodes on disk: the limit beside the record, and the pairs a
resume plans again set aside (the rule: :mod:`pairlab.core.provider_limit`).

``<episode dir>/provider-limit.json`` says which limit ended the episode (kind, the CLI's
message, where it was read). On a resume, every episode directory of a pair with a
``provider-limit`` record is moved to ``<run>/provider-limited/<episode dir>.<n>/`` (n =
the attempt it was: 1, 2, ...): kept whole (and published with the run), out of
``episodes/`` (never analysed), so the pair runs again from nothing and each episode id
ends with one record.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from pairlab.adapters.run.directory import RunDir
from pairlab.core.provider_limit import (
    LIMIT_FILE,
    PROVIDER_LIMITED_DIR,
    ProviderLimit,
    replanned_pairs,
)
from pairlab.core.schedule import PlannedEpisode


def write_limit(episode_dir: Path, limit: ProviderLimit) -> Path:
    episode_dir.mkdir(parents=True, exist_ok=True)
    path = episode_dir / LIMIT_FILE
    path.write_text(json.dumps(limit.to_json(), indent=2) + "\n", encoding="utf-8")
    return path


def set_aside_limited_pairs(run_dir: RunDir, entries: Iterable[PlannedEpisode]) -> set[str]:
    """Move the episode directories of every pair with a ``provider-limit`` record out of
    ``episodes/``; the pair ids set aside (empty: nothing to plan again)."""
    planned = list(entries)
    recorded = run_dir.completed()
    pairs = replanned_pairs(
        {e: r.excluded_reason for e, r in recorded.items()},
        {**{r.episode_id: r.pair_id for r in recorded.values()},
         **{p.episode_id: p.pair_id for p in planned}},
    )  # fmt: skip
    if not pairs:
        return pairs
    aside = run_dir.path / PROVIDER_LIMITED_DIR
    aside.mkdir(parents=True, exist_ok=True)
    for p in planned:
        source = run_dir.episode_dir(p.episode_id)
        if p.pair_id not in pairs or not source.exists():
            continue
        n = 1
        while (aside / f"{source.name}.{n}").exists():
            n += 1
        source.rename(aside / f"{source.name}.{n}")
    return pairs


__all__ = ["set_aside_limited_pairs", "write_limit"]
