"""Execution backends (DESIGN 3): the contract in ``base``, ``factory.make_backend`` choosing by name, implementations ``local`` and ``docker``."""

from pairlab.adapters.backends.base import (
    CollectedFile,
    CollectedFiles,
    EpisodeSpec,
    ExecutionBackend,
    PreparedEpisode,
    RunOutcome,
)
from pairlab.adapters.backends.factory import make_backend

__all__ = [
    "CollectedFile",
    "CollectedFiles",
    "EpisodeSpec",
    "ExecutionBackend",
    "PreparedEpisode",
    "RunOutcome",
    "make_backend",
]
