"""A run's budget ceiling in billed tokens, and the rule that holds it (issue 27, item 5).

A run may carry an approved ceiling (``budget_tokens``; None = no ceiling). Before each
pair (a unit: a pair, or a block of quota intervals) is scheduled the run decides:

* **spent** = the sum of what its recorded episodes billed: each record's
  ``totalTokens`` (provider-native usage, the sum of the billed dimensions). A record
  whose usage is missing (null) is **not** read as zero: it is counted at the
  *per-episode estimate* below, and the decision says how many were estimated.
* **per-episode estimate** = the largest billed total of any recorded episode of the run
  (earlier attempts included, so a resume starts with what it knows).
* **next** = the estimate × the unit's episodes; **running** = the estimate × the
  episodes of units already started and not yet recorded.

Then, in this order:

1. no recorded episode has measured usage yet (nothing to estimate from):
   * nothing recorded and nothing running: **start** (the probe pair: the first unit
     runs alone, and is the one thing the ceiling cannot bound beforehand);
   * nothing recorded, something running: **wait** (until it is recorded);
   * episodes recorded, none with usage: **stop** (the spend is unknown, so the ceiling
     cannot be shown to hold);
2. spent + next > ceiling: **stop** (scheduling ends; units already running finish and
   are recorded; a ceiling lowered below what is spent stops at once);
3. spent + running + next > ceiling: **wait** (re-decided when a running unit is recorded);
4. otherwise **start**.

Reaching the ceiling exactly is not crossing it. A stopped run ends in the named state
``budget-exhausted`` (:data:`~pairlab.core.errors.ReasonCode.BUDGET_EXHAUSTED`); resuming it
with the same run id and a higher ceiling continues it (recorded episodes never run
again). :class:`BudgetStatus` is what ``run.json`` and the report say of the ceiling.

Pure: numbers in, a decision out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from pairlab.core.admission import Admission
from pairlab.core.budget_window import WindowBudgetStatus
from pairlab.core.schemas.base import StrictModel
from pairlab.core.schemas.episode import EpisodeRecord


def billed_tokens(record: EpisodeRecord) -> int | None:
    """What an episode billed, in tokens (provider-native; None when not observed)."""
    return record.total_tokens


@dataclass(frozen=True)
class BudgetDecision:
    """Whether the next unit may start, and the numbers it was decided on."""

    admission: Admission
    ceiling_tokens: int
    spent_tokens: int | None  # measured + estimated for unmeasured records; None: unknown
    per_episode_tokens: int | None  # None: no recorded episode has usage yet
    next_tokens: int | None
    running_tokens: int | None
    measured_episodes: int
    unmeasured_episodes: int

    def text(self) -> str:
        """One line: what is spent, what the next unit could spend, against the ceiling."""
        estimated = (
            f" ({self.unmeasured_episodes} without usage counted at the estimate)"
            if self.unmeasured_episodes
            else ""
        )
        if self.spent_tokens is None:
            return (
                f"{self.unmeasured_episodes} episodes recorded without usage, none with it: "
                f"spend unknown against the ceiling of {self.ceiling_tokens} billed tokens"
            )
        return (
            f"spent {self.spent_tokens}{estimated} + next pair up to {self.next_tokens} "
            f"(estimate {self.per_episode_tokens} per episode) against the ceiling of "
            f"{self.ceiling_tokens} billed tokens"
        )


def decide_next_unit(
    spends: Sequence[int | None],
    *,
    ceiling_tokens: int,
    next_episodes: int,
    running_episodes: int = 0,
) -> BudgetDecision:
    """May the next unit of ``next_episodes`` start? ``spends`` are the recorded episodes'
    billed tokens (None: usage missing). The rule is the module docstring's."""
    measured = [s for s in spends if s is not None]
    unmeasured = len(spends) - len(measured)
    if not measured:
        if spends:
            admission: Admission = "stop"
        else:
            admission = "start" if running_episodes == 0 else "wait"
        return BudgetDecision(admission, ceiling_tokens, None, None, None, None, 0, unmeasured)
    per_episode = max(measured)
    spent = sum(measured) + unmeasured * per_episode
    next_tokens = per_episode * next_episodes
    running_tokens = per_episode * running_episodes
    if spent + next_tokens > ceiling_tokens:
        admission = "stop"
    elif spent + running_tokens + next_tokens > ceiling_tokens:
        admission = "wait"
    else:
        admission = "start"
    return BudgetDecision(
        admission,
        ceiling_tokens,
        spent,
        per_episode,
        next_tokens,
        running_tokens,
        len(measured),
        unmeasured,
    )


class BudgetStatus(StrictModel):
    """``run.json`` → ``budget``: the run's ceilings and where the run stands against them.

    ``ceiling_tokens`` is the token ceiling (None: none; what was spent is said anyway);
    ``window`` the percent-of-window ceiling (:mod:`pairlab.core.budget_window`; None: none,
    and the key is left out of ``run.json``)."""

    ceiling_tokens: int | None = Field(ge=1)
    spent_tokens: int | None = Field(ge=0)  # measured + estimated; None: unknown
    unmeasured_episodes: int = Field(ge=0)  # recorded without usage (counted at the estimate)
    stopped_at_ceiling: bool
    episodes_recorded: int = Field(ge=0)
    episodes_planned: int = Field(ge=0)
    window: WindowBudgetStatus | None = None

    @classmethod
    def of(
        cls,
        records: Iterable[EpisodeRecord],
        *,
        ceiling_tokens: int | None,
        stopped: bool,
        episodes_planned: int,
        window: WindowBudgetStatus | None = None,
    ) -> BudgetStatus:
        spends = [billed_tokens(r) for r in records]
        decision = decide_next_unit(spends, ceiling_tokens=ceiling_tokens or 1, next_episodes=0)
        return cls(
            ceiling_tokens=ceiling_tokens,
            spent_tokens=decision.spent_tokens,
            unmeasured_episodes=decision.unmeasured_episodes,
            stopped_at_ceiling=stopped,
            episodes_recorded=len(spends),
            episodes_planned=episodes_planned,
            window=window,
        )

    @model_serializer(mode="wrap")
    def _without_absent_window(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No ``window`` key without a percent ceiling: ``run.json`` of a token ceiling as it
        always was."""
        dumped: dict[str, Any] = handler(self)
        if dumped.get("window") is None:
            dumped.pop("window", None)
        return dumped

    def to_json(self) -> dict[str, Any]:
        """What ``run.json`` and the flow's result hold."""
        return self.model_dump(mode="json")

    def spent_words(self) -> str:
        """``123 of 400 billed tokens spent`` and/or ``at most 7 of 10% of the subscription
        window used``: each ceiling the run has, against what it spent."""
        spent = "unknown" if self.spent_tokens is None else str(self.spent_tokens)
        parts = []
        if self.ceiling_tokens is not None:
            parts.append(f"{spent} of {self.ceiling_tokens} billed tokens spent")
        if self.window is not None:
            parts.append(self.window.words())
        return ", ".join(parts)

    def fact(self) -> str:
        """The report's facts-line words."""
        if self.stopped_at_ceiling:
            return (
                f" · STOPPED AT THE BUDGET CEILING (budget-exhausted): {self.spent_words()}, "
                f"{self.episodes_recorded} of {self.episodes_planned} episodes recorded"
            )
        ceilings = []
        if self.ceiling_tokens is not None:
            spent = "unknown" if self.spent_tokens is None else str(self.spent_tokens)
            ceilings.append(f"budget ceiling {self.ceiling_tokens} billed tokens, {spent} spent")
        if self.window is not None:
            ceilings.append(
                f"budget ceiling {self.window.ceiling_percent:g}% of the subscription window, "
                f"{self.window.used_words()} used"
            )
        return "".join(f" · {c}" for c in ceilings)


def budget_stop_words(budget: dict[str, Any]) -> str:
    """What a stopped run spent, said in its stop message: ``<spent words>, N of M
    episodes recorded`` (``budget`` is ``run.json``'s)."""
    status = BudgetStatus.model_validate(budget, strict=False)
    return (
        f"{status.spent_words()}, {status.episodes_recorded} of {status.episodes_planned} "
        "episodes recorded"
    )


def budget_fact(budget: object) -> str:
    """The facts-line words of ``report.json``'s ``meta.budget`` (empty without a ceiling)."""
    if not isinstance(budget, dict):
        return ""
    return BudgetStatus.model_validate(budget, strict=False).fact()


__all__ = [
    "Admission",
    "BudgetDecision",
    "BudgetStatus",
    "billed_tokens",
    "budget_fact",
    "budget_stop_words",
    "decide_next_unit",
]
