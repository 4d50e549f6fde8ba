"""A run's budget ceiling in percent of a subscription window, and the rule that holds it
(issue 27, item 5; the token ceiling is :mod:`pairlab.core.budget`).

A run on an account with subscription windows may carry an approved ceiling
``budget_window_percent`` = P: what the run may use of each of the account's windows
(the account-wide five-hour and seven-day windows the quota probe reads; model-scoped
windows such as ``claude:opus`` are not ceilinged). Before each unit (a pair, or a block
of quota intervals) the run reads the windows and decides, per window:

**Readings are whole percent** (every real source floors the exact fraction; precision
1 point, or the precision the source states): a reading r means a true use in
[r, r + precision). So the rule counts every difference of two readings at its upper
bound, never at its face value:

* **used since the run started** = ``carried`` + (now − start) + precision, where
  ``start`` is the window's reading when the run started (``run.json`` keeps it, so a
  resume counts from the run's own start) and ``carried`` is what earlier periods of the
  window held: when the window has reset since (its reset identity changed),
  ``carried`` grows by the highest reading of the old period the run took (the gate's,
  or any episode's quota bracket) − start + precision and ``start`` becomes 0 in the new
  one. It includes whatever else used the account
  (concurrent use is the account's, and the ceiling is the account's);
* **per-episode estimate** = the largest (after − before + precision) of any recorded
  episode whose quota bracket read the window twice in the same period (earlier
  attempts included). An episode without such a bracket does not lower it;
* **next** = estimate × the unit's episodes; **running** = estimate × the episodes of
  units already started and not yet recorded.

Then, over the windows, in this order (the first window that stops or waits decides):

0. the run's start reading or the current reading of every window is unknown (the
   probe failed, an API key): **stop** (the ceiling cannot be shown to hold);
1. no recorded episode has a measured bracket yet: used > P: **stop**; else as the
   token rule's probe pair: nothing recorded and nothing running **start** (the first
   unit runs alone), something running **wait**, episodes recorded without any
   measured bracket **stop**;
2. used + next > P: **stop** (units already running finish and are recorded);
3. used + running + next > P: **wait**;
4. otherwise **start**.

Reaching P exactly is not crossing it. A window whose reading is unknown now but was known
at the start stops the run (rule 0 applies per window); a window unknown at the start is
not ceilinged (the others are). With a token ceiling too, either one stops: the more
restrictive admission wins (stop over wait over start). The stopped run ends
``budget-exhausted`` like the token ceiling; a resume with a raised P continues.

Pure: readings in, a decision out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from pydantic import Field

from pairlab.core.admission import Admission, strictness
from pairlab.core.schemas.base import StrictModel
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.schemas.quota import QuotaObservation

WHOLE_PERCENT: Final = 1.0  # the precision assumed when a source states none


def _precision(obs: QuotaObservation) -> float:
    return obs.precision_percent if obs.precision_percent else WHOLE_PERCENT


def account_windows(observations: Iterable[QuotaObservation]) -> dict[str, QuotaObservation]:
    """The account-wide windows of one look (provider without a scope), by window name."""
    return {o.window: o for o in observations if ":" not in o.provider}


class WindowStart(StrictModel):
    """One window's accounting since the run started (``run.json`` → ``budget``)."""

    window: str
    start_percent: float = Field(ge=0, le=100)
    reset_id: str | None
    carried_percent: float = Field(default=0.0, ge=0)  # earlier periods' use, upper bound
    last_percent: float = Field(ge=0, le=100)  # the latest reading of the current period
    precision_percent: float = Field(default=WHOLE_PERCENT, gt=0)

    def advanced(self, now: QuotaObservation, seen: Iterable[QuotaObservation] = ()) -> WindowStart:
        """This accounting after reading ``now`` (a known reading of the same window).
        ``seen``: other readings of the window (the episodes' quota brackets): when the
        window has reset, the old period's last use is the highest reading of it the run
        took anywhere, not only the gate's own."""
        assert now.used_percent is not None
        if now.reset_id is not None and self.reset_id is not None and now.reset_id != self.reset_id:
            old_period = [
                o.used_percent
                for o in seen
                if o.reset_id == self.reset_id and o.used_percent is not None
            ]
            last = max([self.last_percent, *old_period])
            carried = self.carried_percent + last - self.start_percent + self.precision_percent
            return self.model_copy(
                update={
                    "start_percent": 0.0,
                    "reset_id": now.reset_id,
                    "carried_percent": carried,
                    "last_percent": now.used_percent,
                }
            )
        return self.model_copy(
            update={"last_percent": now.used_percent, "reset_id": self.reset_id or now.reset_id}
        )

    @property
    def used_percent(self) -> float:
        """Used since the run started, at its upper bound (module doc)."""
        return (
            self.carried_percent
            + max(0.0, self.last_percent - self.start_percent)
            + self.precision_percent
        )


def start_windows(observations: Iterable[QuotaObservation]) -> list[WindowStart]:
    """The windows' accounting at the run's start (the known account-wide readings)."""
    return [
        WindowStart(
            window=w,
            start_percent=o.used_percent,
            reset_id=o.reset_id,
            last_percent=o.used_percent,
            precision_percent=_precision(o),
        )
        for w, o in sorted(account_windows(observations).items())
        if o.used_percent is not None
    ]


def bracket_readings(records: Iterable[EpisodeRecord], window: str) -> list[QuotaObservation]:
    """Every reading of the account-wide ``window`` in the records' quota brackets."""
    return [
        o
        for r in records
        for o in (*(r.quota_before or []), *(r.quota_after or []))
        if o.window == window and ":" not in o.provider
    ]


def advance_windows(
    starts: Sequence[WindowStart],
    now: Mapping[str, QuotaObservation],
    records: Sequence[EpisodeRecord] = (),
) -> list[WindowStart]:
    """The accounting after one look: each window with a known reading advanced (the
    records' brackets seen too), the rest as they were."""
    out = []
    for start in starts:
        reading = now.get(start.window)
        if reading is None or reading.used_percent is None:
            out.append(start)
            continue
        out.append(start.advanced(reading, bracket_readings(records, start.window)))
    return out


def episode_window_use(record: EpisodeRecord, window: str) -> float | None:
    """One episode's use of ``window`` at its upper bound (after − before + precision);
    None when its bracket did not read the window twice in the same period."""
    before = account_windows(record.quota_before or []).get(window)
    after = account_windows(record.quota_after or []).get(window)
    if before is None or after is None:
        return None
    if before.used_percent is None or after.used_percent is None:
        return None
    if before.reset_id != after.reset_id or after.used_percent < before.used_percent:
        return None
    return after.used_percent - before.used_percent + max(_precision(before), _precision(after))


@dataclass(frozen=True)
class WindowDecision:
    """Whether the next unit may start against P, and the numbers of the deciding window."""

    admission: Admission
    ceiling_percent: float
    window: str | None  # the deciding window (None: no window known)
    used_percent: float | None
    per_episode_percent: float | None
    next_percent: float | None
    running_percent: float | None
    reason: str

    def text(self) -> str:
        """One line for the log and the stop message."""
        if self.used_percent is None:
            return f"{self.reason} against the ceiling of {self.ceiling_percent:g}% of the window"
        estimate = (
            "no episode measured yet"
            if self.per_episode_percent is None
            else f"next pair up to {self.next_percent:g} points (estimate "
            f"{self.per_episode_percent:g} per episode)"
        )
        return (
            f"{self.window} window: used {self.used_percent:g} points since the run started "
            f"(whole-percent readings at their upper bound) + {estimate} against the ceiling "
            f"of {self.ceiling_percent:g}%"
        )


def _one_window(
    start: WindowStart,
    estimate: float | None,
    *,
    ceiling_percent: float,
    recorded: int,
    next_episodes: int,
    running_episodes: int,
) -> WindowDecision:
    used = start.used_percent

    def decided(admission: Admission, reason: str) -> WindowDecision:
        nxt = None if estimate is None else estimate * next_episodes
        run = None if estimate is None else estimate * running_episodes
        return WindowDecision(
            admission, ceiling_percent, start.window, used, estimate, nxt, run, reason
        )

    if estimate is None:
        if used > ceiling_percent:
            return decided("stop", "used beyond the ceiling")
        if recorded:
            return decided("stop", "no recorded episode measured the window")
        return decided("start" if running_episodes == 0 else "wait", "the probe pair")
    if used + estimate * next_episodes > ceiling_percent:
        return decided("stop", "the next pair would cross the ceiling")
    if used + estimate * (running_episodes + next_episodes) > ceiling_percent:
        return decided("wait", "with the running pairs it would cross the ceiling")
    return decided("start", "within the ceiling")


def _unread(ceiling_percent: float, window: str | None, reason: str) -> WindowDecision:
    """Rule 0: a window not read cannot be shown to hold: stop."""
    return WindowDecision("stop", ceiling_percent, window, None, None, None, None, reason)


def decide_window_unit(
    starts: Sequence[WindowStart],
    now: Mapping[str, QuotaObservation],
    records: Sequence[EpisodeRecord],
    *,
    ceiling_percent: float,
    next_episodes: int,
    running_episodes: int = 0,
) -> tuple[WindowDecision, list[WindowStart]]:
    """May the next unit start against the ceiling of ``ceiling_percent`` of each window?
    ``starts``: the run's accounting so far; ``now``: this look's account-wide readings by
    window. Returns the deciding window's decision and the accounting advanced by this look
    (the caller keeps it). The rule is the module docstring's."""
    if not starts:
        return _unread(
            ceiling_percent, None, "no subscription window was read when the run started"
        ), []
    advanced: list[WindowStart] = []
    decisions: list[WindowDecision] = []
    for start in starts:
        reading = now.get(start.window)
        if reading is None or reading.used_percent is None:
            advanced.append(start)
            reason = f"the {start.window} window cannot be read now"
            decisions.append(_unread(ceiling_percent, start.window, reason))
            continue
        current = start.advanced(reading, bracket_readings(records, start.window))
        advanced.append(current)
        uses = [u for r in records if (u := episode_window_use(r, start.window)) is not None]
        decisions.append(
            _one_window(
                current,
                max(uses) if uses else None,
                ceiling_percent=ceiling_percent,
                recorded=len(records),
                next_episodes=next_episodes,
                running_episodes=running_episodes,
            )
        )
    deciding = max(decisions, key=lambda d: strictness(d.admission))
    return deciding, advanced


class WindowBudgetStatus(StrictModel):
    """``run.json`` → ``budget.window``: the percent ceiling and the windows' accounting."""

    ceiling_percent: float = Field(gt=0, le=100)
    windows: list[WindowStart]

    @property
    def used_percent(self) -> float | None:
        """The most used window's use since the run started (upper bound); None: unread."""
        return max((w.used_percent for w in self.windows), default=None)

    def used_words(self) -> str:
        used = self.used_percent
        return "unknown" if used is None else f"at most {used:g}"

    def words(self) -> str:
        return f"{self.used_words()} of {self.ceiling_percent:g}% of the subscription window used"


__all__ = [
    "WindowBudgetStatus",
    "WindowDecision",
    "WindowStart",
    "account_windows",
    "advance_windows",
    "bracket_readings",
    "decide_window_unit",
    "episode_window_use",
    "start_windows",
]
