"""Verdict values and the assessment every check module returns.

A verdict is a value, never an exception: ``supported-candidate``,
``rejected`` or ``inconclusive``, each with the reason codes that explain it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from pairlab.core.verdict.reasons import VerdictReason


class Verdict(StrEnum):
    SUPPORTED = "supported-candidate"
    REJECTED = "rejected"
    INCONCLUSIVE = "inconclusive"

    @property
    def exit_code(self) -> int:
        return {Verdict.SUPPORTED: 0, Verdict.REJECTED: 1, Verdict.INCONCLUSIVE: 2}[self]


@dataclass(frozen=True)
class Assessment:
    """One dimension's verdict for one pair, with the codes that explain it."""

    verdict: Verdict
    reasons: frozenset[VerdictReason] = field(default_factory=frozenset)


def assess(rejecting: Iterable[VerdictReason], inconclusive: Iterable[VerdictReason]) -> Assessment:
    """Rejected when any rejecting code was found, else inconclusive when any
    inconclusive code was found, else supported. All codes are kept."""
    rejects = frozenset(rejecting)
    doubts = frozenset(inconclusive)
    if rejects:
        return Assessment(Verdict.REJECTED, rejects | doubts)
    if doubts:
        return Assessment(Verdict.INCONCLUSIVE, doubts)
    return Assessment(Verdict.SUPPORTED)


def combine_verdicts(verdicts: Iterable[Verdict]) -> Verdict:
    """Any rejected → rejected; all supported (and at least one) → supported; else inconclusive."""
    seen = list(verdicts)
    if Verdict.REJECTED in seen:
        return Verdict.REJECTED
    if seen and all(v is Verdict.SUPPORTED for v in seen):
        return Verdict.SUPPORTED
    return Verdict.INCONCLUSIVE
