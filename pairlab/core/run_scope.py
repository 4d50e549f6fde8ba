"""What a run can answer, said before its first episode (the plan line, the progress card).

A run whose cohorts have fewer pairs than the gate can decide nothing: every cohort is
*insufficient* by design and the report has no cohort table. A gate below the study
plan's minimum makes the whole analysis *exploratory*. And the subscription evidence of
one account needs one episode at a time: with concurrency above 1, pairs overlap on the
account, each episode's quota interval sees the other's use (flagged as concurrent use),
and every quota verdict comes out inconclusive.

Pure: numbers in, sentences out.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunScope:
    """The answerable part of a run, from its settings alone."""

    pairs_per_cohort: int
    gate: int
    plan_min_pairs: int
    concurrency: int
    measures_quota: bool  # the profile has a quota probe (subscription evidence is wanted)
    one_account_at_a_time: bool  # quota intervals or work-pool dispatch with its own limit

    @property
    def insufficient(self) -> bool:
        return self.pairs_per_cohort < self.gate

    @property
    def exploratory(self) -> bool:
        return self.gate < self.plan_min_pairs

    @property
    def spoils_quota(self) -> bool:
        return self.measures_quota and self.concurrency > 1 and not self.one_account_at_a_time

    @property
    def is_limited(self) -> bool:
        return self.insufficient or self.exploratory or self.spoils_quota

    def labels(self) -> list[str]:
        """The short forms the progress card carries (empty when nothing limits the run)."""
        out = []
        if self.insufficient:
            out.append(
                f"INSUFFICIENT by design ({self.pairs_per_cohort} pairs per cohort < gate "
                f"{self.gate})"
            )
        if self.exploratory:
            out.append(f"EXPLORATORY (gate {self.gate} < plan minimum {self.plan_min_pairs})")
        if self.spoils_quota:
            out.append(f"quota verdicts inconclusive (concurrency {self.concurrency} > 1)")
        return out

    def lines(self) -> list[str]:
        """One sentence per finding; the first says what the cohorts can show."""
        n, gate = self.pairs_per_cohort, self.gate
        if self.insufficient:
            out = [
                f"INSUFFICIENT by design: {n} pairs per cohort < gate {gate}; every cohort "
                f"will be insufficient (no win or regression can be decided, no cohort "
                f"table): use at least {gate} repetitions"
            ]
        else:
            out = [f"{n} pairs per cohort >= gate {gate}: each cohort can be decided"]
        if self.exploratory:
            out.append(
                f"EXPLORATORY: gate {gate} < the study plan's minimum of "
                f"{self.plan_min_pairs} pairs; effects are not wins"
            )
        if self.spoils_quota:
            out.append(
                f"subscription quota: concurrency {self.concurrency} > 1 overlaps episodes on "
                "one account, so their quota use is flagged as concurrent and every quota "
                "verdict will be inconclusive: use concurrency 1 for subscription evidence"
            )
        return out
