"""The run's budget ceiling at the one place pairs are scheduled: the window's admission.

Before the window starts a unit it asks :meth:`BudgetGate.admit`; the rule is
:func:`pairlab.core.budget.decide_next_unit` over every record the run holds (earlier
attempts included, via :class:`~flows.evidence.progress.PairProgress`) and the units
still running. ``stop`` ends scheduling for good: the window starts nothing more, lets
the running units finish (they are recorded) and returns; the flow then reports and
publishes what was done and ends ``budget-exhausted`` (flows/run_ui.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from prefect import get_run_logger

from flows.evidence.progress import PairProgress
from pairlab.core.budget import Admission, BudgetDecision, billed_tokens, decide_next_unit
from pairlab.core.schedule import PlannedEpisode

Unit = list[PlannedEpisode]


class BudgetGate:
    """Admits units while the ceiling holds; remembers the decision that stopped the run."""

    def __init__(self, run_id: str, ceiling_tokens: int, progress: PairProgress) -> None:
        self.run_id = run_id
        self.ceiling_tokens = ceiling_tokens
        self.progress = progress
        self.stopped: BudgetDecision | None = None

    def admit(self, unit: Unit, running: Sequence[Unit]) -> Admission:
        if self.stopped is not None:
            return "stop"
        recorded = self.progress.records
        spends = [billed_tokens(r) for r in recorded.values()]
        in_flight = sum(1 for u in running for e in u if e.episode_id not in recorded)
        todo = sum(1 for e in unit if e.episode_id not in recorded)
        decision = decide_next_unit(
            spends,
            ceiling_tokens=self.ceiling_tokens,
            next_episodes=todo,
            running_episodes=in_flight,
        )
        if decision.admission == "stop":
            self.stopped = decision
            get_run_logger().warning(
                "run %s: budget ceiling reached, no new pair starts (%s); %d pair(s) still "
                "running finish and are recorded",
                self.run_id,
                decision.text(),
                len(running),
            )
        return decision.admission


__all__ = ["BudgetGate"]
