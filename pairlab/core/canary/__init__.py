"""Canary-trial evidence (DESIGN 9): the frozen manifest, per-run evidence, loom's artifact.

The canary flow freezes a :class:`TrialManifest` (``manifest``) before anything
runs, records one :class:`RunEvidence` (``evidence``) per executed episode, and
turns them into loom's version-1 comparison artifact with :func:`build_artifact`
(``artifact``; token vectors and accounting in ``tokens``, quota observations
in ``quota``). Only identifiers, digests, statuses, numbers and times go into
the artifact: no prompt, output, path, secret, price or account identity.
"""

from __future__ import annotations

from pairlab.core.canary.artifact import build_artifact, work_unit_id
from pairlab.core.canary.evidence import CheckResult, RunEvidence
from pairlab.core.canary.manifest import (
    ArmRevision,
    Assignment,
    Budget,
    FrozenFixture,
    PlannedRun,
    TrialManifest,
    to_identifier,
)

__all__ = [
    "ArmRevision",
    "Assignment",
    "Budget",
    "CheckResult",
    "FrozenFixture",
    "PlannedRun",
    "RunEvidence",
    "TrialManifest",
    "build_artifact",
    "to_identifier",
    "work_unit_id",
]
