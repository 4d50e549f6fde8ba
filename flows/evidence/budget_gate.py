"""The run's budget ceilings at the one place pairs are scheduled: the window's admission.

Before the window starts a unit it asks :meth:`BudgetGate.admit`. Each ceiling the run
has answers: the token ceiling by :func:`pairlab.core.budget.decide_next_unit` over every
record the run holds (earlier attempts included, via
:class:`~flows.evidence.progress.PairProgress`) and the units still running; the ceiling
in percent of the subscription windows by
:func:`pairlab.core.budget_window.decide_window_unit` over a fresh look at the account's
windows (the profile's quota probe) against the run's accounting since it started
(``<run>/budget-window.json``, written at the first look and kept by a resume). The more
restrictive answer wins. ``stop`` ends scheduling for good: the window starts nothing
more, lets the running units finish (they are recorded) and returns; the flow then
reports and publishes what was done and ends ``budget-exhausted`` (flows/run_ui.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from prefect import get_run_logger

from flows.evidence.progress import PairProgress
from pairlab.adapters.run.directory import RunDir
from pairlab.core.admission import Admission, stricter
from pairlab.core.budget import decide_next_unit
from pairlab.core.budget_window import (
    WindowBudgetStatus,
    WindowStart,
    account_windows,
    advance_windows,
    decide_window_unit,
    start_windows,
)
from pairlab.core.schedule import PlannedEpisode
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.schemas.quota import QuotaObservation

Unit = list[PlannedEpisode]
WINDOW_ACCOUNTING = "budget-window.json"


@dataclass
class WindowCeiling:
    """The percent-of-window ceiling: how to read the windows and the run's accounting."""

    ceiling_percent: float
    read: Callable[[], list[QuotaObservation]]
    run_dir: RunDir
    starts: list[WindowStart] | None = None

    def load(self) -> list[WindowStart]:
        """The run's accounting since it started: kept from an earlier attempt, else the
        windows as read now (the run's start)."""
        if self.starts is None:
            path = self.run_dir.path / WINDOW_ACCOUNTING
            if path.is_file():
                kept = WindowBudgetStatus.model_validate_json(path.read_bytes())
                self.starts = kept.windows
            else:
                self.starts = start_windows(self.read())
                self._save()
        return self.starts

    def _save(self) -> None:
        status = self.status()
        self.run_dir.write_json(WINDOW_ACCOUNTING, status.model_dump(mode="json"))

    def status(self) -> WindowBudgetStatus:
        return WindowBudgetStatus(ceiling_percent=self.ceiling_percent, windows=self.starts or [])

    def final_status(self, records: Sequence[EpisodeRecord]) -> WindowBudgetStatus:
        """Where the run stands after its last pair: one more look at the windows."""
        starts = self.load()
        if starts:
            self.starts = advance_windows(starts, account_windows(self.read()), records)
            self._save()
        return self.status()

    def decide(
        self, records: Sequence[EpisodeRecord], next_episodes: int, running_episodes: int
    ) -> tuple[Admission, str]:
        starts = self.load()
        decision, advanced = decide_window_unit(
            starts,
            account_windows(self.read()) if starts else {},
            records,
            ceiling_percent=self.ceiling_percent,
            next_episodes=next_episodes,
            running_episodes=running_episodes,
        )
        self.starts = advanced
        self._save()
        return decision.admission, decision.text()


class BudgetGate:
    """Admits units while every ceiling holds; remembers the words that stopped the run."""

    def __init__(
        self,
        run_id: str,
        progress: PairProgress,
        *,
        ceiling_tokens: int | None = None,
        window: WindowCeiling | None = None,
    ) -> None:
        self.run_id = run_id
        self.ceiling_tokens = ceiling_tokens
        self.window = window
        self.progress = progress
        self.stopped: str | None = None  # why scheduling ended (None: it did not)

    def admit(self, unit: Unit, running: Sequence[Unit]) -> Admission:
        if self.stopped is not None:
            return "stop"
        recorded = self.progress.records
        in_flight = sum(1 for u in running for e in u if e.episode_id not in recorded)
        todo = sum(1 for e in unit if e.episode_id not in recorded)
        admission: Admission = "start"
        why: list[str] = []
        if self.ceiling_tokens is not None:
            decision = decide_next_unit(
                [r.total_tokens for r in recorded.values()],
                ceiling_tokens=self.ceiling_tokens,
                next_episodes=todo,
                running_episodes=in_flight,
            )
            admission = stricter(admission, decision.admission)
            if decision.admission == "stop":
                why.append(decision.text())
        if self.window is not None and admission != "stop":
            window_admission, text = self.window.decide(list(recorded.values()), todo, in_flight)
            admission = stricter(admission, window_admission)
            if window_admission == "stop":
                why.append(text)
        if admission == "stop":
            self.stopped = "; ".join(why)
            get_run_logger().warning(
                "run %s: budget ceiling reached, no new pair starts (%s); %d pair(s) still "
                "running finish and are recorded",
                self.run_id,
                self.stopped,
                len(running),
            )
        return admission

    def window_status(self) -> WindowBudgetStatus | None:
        """The percent ceiling's status after the run's last pair (a fresh look)."""
        return (
            None
            if self.window is None
            else self.window.final_status(list(self.progress.records.values()))
        )


__all__ = ["WINDOW_ACCOUNTING", "BudgetGate", "WindowCeiling"]
