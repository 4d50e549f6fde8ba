"""How a run's provider emulator behaves: the faults it injects into which episodes, the
scripted model's chance of a wrong solution, the account's quota limits, and the seed
each pair's script is drawn with. Pure data; the run endpoint (adapters) applies it."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from pairlab.core.emulator.quota_model import AccountPlan
from pairlab.core.emulator.request_ledger import FAULT_KINDS, Fault
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.base import StrictModel
from pairlab.core.stats.seeds import derive_seed


class FaultRule(StrictModel):
    """A fault injected into every episode it selects (a None field selects any value)."""

    fault: Fault
    task_id: str | None = None
    arm: str | None = None
    repetition: int | None = Field(default=None, ge=0)

    def selects(self, task_id: str, arm: str, repetition: int) -> bool:
        return (
            self.task_id in (None, task_id)
            and self.arm in (None, arm)
            and self.repetition in (None, repetition)
        )


RUN_FIVE_HOUR_LIMIT = 10_000_000.0
RUN_SEVEN_DAY_LIMIT = 100_000_000.0


class EmulatorSettings(StrictModel):
    """Advanced: how a run's emulator behaves (the defaults are the documented model)."""

    faults: list[FaultRule] = Field(
        default_factory=list, description="Faults injected into the episodes they select"
    )
    wrong_probability: float = Field(
        default=0.1, ge=0.0, le=1.0, description="Chance the scripted model solves wrongly"
    )
    # A run's account is sized so a demo-sized run (~150 real-CLI episodes, ~30k weighted
    # tokens each) stays inside its 5-hour window while the whole-percent readings still
    # move every few episodes; a longer run meets the limit as a real account would.
    five_hour_limit: float | None = Field(
        default=RUN_FIVE_HOUR_LIMIT, gt=0, description="Weighted tokens per 5-hour window"
    )
    seven_day_limit: float | None = Field(
        default=RUN_SEVEN_DAY_LIMIT, gt=0, description="Weighted tokens per 7-day window"
    )
    keep_requests: bool = Field(
        default=False, description="Store every request body (isolation audits; large)"
    )

    def plan(self) -> AccountPlan:
        limits: dict[str, Any] = {}
        if self.five_hour_limit is not None:
            limits["five_hour_limit"] = self.five_hour_limit
        if self.seven_day_limit is not None:
            limits["seven_day_limit"] = self.seven_day_limit
        return AccountPlan(**limits)

    def faults_for(self, task_id: str, arm: str, repetition: int) -> list[Fault]:
        return [r.fault for r in self.faults if r.selects(task_id, arm, repetition)]


FAULT_SYNTAX = "KIND@REQUEST[:TASK[:ARM[:REPETITION]]]"


def parse_fault_rule(text: str) -> FaultRule:
    """``KIND@REQUEST`` (e.g. ``rate-limit-429@1``), optionally narrowed to a task, an arm
    and a repetition (``*`` or empty = any): ``cut-stream@2:fix-median:optimizer``."""
    head, _, narrow = text.partition(":")
    kind, sep, index = head.partition("@")
    parts = narrow.split(":") if narrow else []
    task, arm, rep = [*(p if p not in ("", "*") else None for p in parts), None, None, None][:3]
    if not sep or not index.isdigit() or len(parts) > 3 or (rep is not None and not rep.isdigit()):
        raise InvalidInputError(
            f"fault '{text}' must be {FAULT_SYNTAX} (kinds: {', '.join(FAULT_KINDS)})",
            reason=ReasonCode.INVALID_INPUT,
        )
    try:
        fault = Fault.model_validate({"kind": kind, "at_request": int(index)})
    except ValueError as exc:
        raise InvalidInputError(
            f"fault '{text}': unknown kind '{kind}' ({', '.join(FAULT_KINDS)})",
            reason=ReasonCode.INVALID_INPUT,
        ) from exc
    return FaultRule(
        fault=fault, task_id=task, arm=arm, repetition=int(rep) if rep is not None else None
    )


def pair_seed(seed: int, task_id: str, repetition: int) -> int:
    """The scripted model's seed for one pair: both arms of a pair play the same script
    choices (so they differ by the intervention alone); repetitions differ."""
    return derive_seed("pairlab.emulator.pair", str(seed), task_id, str(repetition)) % 2**31


__all__ = ["FAULT_SYNTAX", "EmulatorSettings", "FaultRule", "pair_seed", "parse_fault_rule"]
