"""Execution backends (DESIGN 3): the contract in ``base``, implementations ``local`` and ``docker``."""

from pairlab.adapters.backends.base import (
    CollectedFile,
    CollectedFiles,
    EpisodeSpec,
    ExecutionBackend,
    PreparedEpisode,
    RunOutcome,
    make_backend,
)

__all__ = [
    "CollectedFile",
    "CollectedFiles",
    "EpisodeSpec",
    "ExecutionBackend",
    "PreparedEpisode",
    "RunOutcome",
    "make_backend",
]
