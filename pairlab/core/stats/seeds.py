"""Deterministic seeds for resampling, derived from names, never from data.

A bootstrap interval must be reproducible from the run alone: the same run id,
cohort key and metric give the same resamples on every machine and every run,
whatever the values look like (``1`` or ``1.0``) and in whatever order the
episode lines arrived. So a seed is a SHA-256 of the *names* of what is being
resampled (never Python's salted ``hash()``, never the values), and the random
stream is NumPy's PCG64, whose output for a given seed is stable across
platforms.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import numpy as np

# Bump when the derivation changes: old results then stop matching on purpose.
SEED_DOMAIN = "pairlab.bootstrap.v1"


# json.dumps(..., ensure_ascii=False, separators=(",", ":")) builds this encoder per call
_CANONICAL = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def derive_seed(*parts: str | Sequence[str]) -> int:
    """A 128-bit seed from an ordered list of names (strings or string tuples)."""
    canonical = _CANONICAL.encode(
        [SEED_DOMAIN, *[p if isinstance(p, str) else list(p) for p in parts]]
    )
    return int.from_bytes(hashlib.sha256(canonical.encode("utf-8")).digest()[:16], "big")


def make_rng(*parts: str | Sequence[str]) -> np.random.Generator:
    """A fresh generator seeded by :func:`derive_seed` of ``parts``."""
    return np.random.Generator(np.random.PCG64(derive_seed(*parts)))
