"""Verdict values and what every rule module returns.

A verdict is a value, never an exception: ``supported-candidate``,
``rejected`` or ``inconclusive``. Each rule that fires is a :class:`Finding`
— its reason code and one plain sentence saying what it saw — so the same
evaluation gives loom's reason codes and ``pairlab compare --explain``.
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

    def worse(self, other: Verdict) -> Verdict:
        """Rejected over inconclusive over supported."""
        for verdict in (Verdict.REJECTED, Verdict.INCONCLUSIVE):
            if verdict in (self, other):
                return verdict
        return Verdict.SUPPORTED


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    """The worst of the verdicts (supported when there are none)."""
    result = Verdict.SUPPORTED
    for verdict in verdicts:
        result = result.worse(verdict)
    return result


def aggregate(verdicts: Iterable[Verdict]) -> Verdict:
    """Across pairs: any rejected → rejected; all supported (and at least one) → supported;
    otherwise (including no pairs at all) inconclusive."""
    seen = list(verdicts)
    return worst(seen) if seen else Verdict.INCONCLUSIVE


@dataclass(frozen=True)
class Finding:
    """One rule that fired: its reason code and what it saw, in plain words."""

    reason: VerdictReason
    detail: str


@dataclass(frozen=True)
class Assessment:
    """One dimension's verdict for one pair: the findings behind it, or (when none
    fired) a plain statement of what was checked."""

    verdict: Verdict
    findings: tuple[Finding, ...] = ()
    checked: str = ""

    @property
    def reasons(self) -> frozenset[VerdictReason]:
        return frozenset(f.reason for f in self.findings)


@dataclass
class Findings:
    """Collects findings in the order the rules run."""

    items: list[Finding] = field(default_factory=list)

    def add(self, reason: VerdictReason, detail: str) -> None:
        self.items.append(Finding(reason, detail))

    def assessment(self, verdict: Verdict, checked: str = "") -> Assessment:
        return Assessment(verdict, tuple(self.items), checked)
