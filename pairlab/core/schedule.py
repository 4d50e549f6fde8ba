"""Episode schedules (DESIGN 6): Williams-square evidence evals and AB/BA canaries.

Evidence evals: for each task, repetitions come in blocks; each block is one
Williams design over the arms (for an even arm count n, n rows: every arm in every
position once and every arm immediately preceded by every other arm once; for an
odd n, the square and its mirror, 2n rows). The rows of each block are put in a
seeded random order. A repetition count that is not a multiple of the block size
uses the first rows of the next shuffled block.

Quota-aware evidence plans (issue 16): the repetitions of a task are grouped into
blocks of ``k`` (``QuotaIntervalPlan.episodes_per_interval``); a block takes one
Williams row, and each arm of the row runs its ``k`` episodes back to back in one
scheduled quota interval of ``interval_s`` seconds, the arms' intervals one after
another (arm-major order; :mod:`pairlab.core.quota.intervals`). Pairs stay
``(task, repetition)`` for the token metrics; the intervals of a block form a
quota pair.

Canary trials: baseline/candidate alternate AB/BA from a seeded start, separately
within each pre-declared stratum; strata are never mixed in one pair.

Randomness is ``random.Random`` seeded from a SHA-256 of (seed, stratum, task id),
never Python's ``hash()``: the same seed gives the same schedule on every run and
every Python version. Extending the repetitions never changes earlier ones.
"""

from __future__ import annotations

import hashlib
import random
import re
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal

from pydantic import Field

from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.base import CamelModel
from pairlab.core.schemas.episode import make_episode_id, make_pair_id

CANARY_ARMS: tuple[str, str] = ("baseline", "candidate")
DEFAULT_STRATA: tuple[str, ...] = ("cold", "warm")
# Ids are joined with ':' into pair ids, so no part may contain one.
_ID_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


class PlannedEpisode(CamelModel):
    task_id: str
    repetition: int = Field(ge=0)  # 0-based
    order: int = Field(ge=0)  # 0-based position within its pair
    arm: str
    pair_id: str
    episode_id: str
    stratum: str | None = None  # canary trials only
    quota_interval: str | None = None  # quota-aware evidence plans only

    @classmethod
    def of(
        cls, task_id: str, repetition: int, order: int, arm: str, pair_id: str, **where: str | None
    ) -> PlannedEpisode:
        """The episode of ``arm`` at ``order`` in pair ``pair_id`` (its id derived from
        both); ``where``: its stratum or quota interval, when the design has one."""
        return cls(
            task_id=task_id,
            repetition=repetition,
            order=order,
            arm=arm,
            pair_id=pair_id,
            episode_id=make_episode_id(pair_id, arm),
            **where,
        )


class QuotaIntervalPlan(CamelModel):
    """Each arm's ``episodes_per_interval`` episodes of a block run in one scheduled
    quota interval of ``interval_s`` seconds (which must exceed their run time)."""

    episodes_per_interval: int = Field(ge=1, le=200)
    interval_s: float = Field(gt=0, le=86_400)


class Schedule(CamelModel):
    design: Literal["williams", "canary"]
    run_id: str
    seed: int
    arms: list[str]
    repetitions: int = Field(ge=1)
    strata: list[str] | None = None
    entries: list[PlannedEpisode]
    quota_intervals: QuotaIntervalPlan | None = None

    def pairs(self) -> list[list[PlannedEpisode]]:
        """Each pair's episodes in planned order, pairs in schedule order."""
        grouped: dict[str, list[PlannedEpisode]] = {}
        for entry in self.entries:
            grouped.setdefault(entry.pair_id, []).append(entry)
        return [sorted(group, key=lambda e: e.order) for group in grouped.values()]

    def intervals(self) -> list[list[PlannedEpisode]]:
        """Quota-aware plans: each scheduled interval's episodes in run order."""
        grouped: dict[str, list[PlannedEpisode]] = {}
        for entry in self.entries:
            if entry.quota_interval is not None:
                grouped.setdefault(entry.quota_interval, []).append(entry)
        return list(grouped.values())

    def units(self) -> list[list[PlannedEpisode]]:
        """What runs one after another as a unit, in schedule order: a pair; with quota
        intervals, a block (every arm's interval of one task, arm-major)."""
        if self.quota_intervals is None:
            return self.pairs()
        grouped: dict[str, list[PlannedEpisode]] = {}
        for entry in self.entries:
            assert entry.quota_interval is not None
            grouped.setdefault(entry.quota_interval.rsplit(":", 1)[0], []).append(entry)
        return list(grouped.values())

    def to_json(self) -> dict[str, object]:
        """The ``pairlab plan --json`` shape."""
        keys: tuple[str, ...] = ("taskId", "repetition", "order", "arm", "pairId", "episodeId")
        if self.design == "canary":
            keys = (*keys, "stratum")
        if self.quota_intervals is not None:
            keys = (*keys, "quotaInterval")
        episodes = []
        for entry in self.entries:
            wire = entry.model_dump(by_alias=True)
            episodes.append({k: wire[k] for k in keys})
        out: dict[str, object] = {
            "runId": self.run_id,
            "seed": self.seed,
            "repetitions": self.repetitions,
            "arms": list(self.arms),
            "episodes": episodes,
        }
        if self.quota_intervals is not None:
            out["quotaIntervals"] = self.quota_intervals.model_dump(by_alias=True)
        return out


def williams_rows(n: int) -> list[list[int]]:
    """Rows (arm indices in order) of a Williams design for ``n`` arms.

    Even n: n rows; odd n: 2n rows (the cyclic square and its mirror). Every arm
    takes every position equally often and immediately follows every other arm
    equally often (once for even n, twice for odd n).
    """
    if n < 1:
        raise InvalidInputError(
            "a Williams design needs at least one arm", reason=ReasonCode.INVALID_INPUT
        )
    first = [0]
    low, high = 1, n - 1
    while len(first) < n:
        first.append(low)
        low += 1
        if len(first) < n:
            first.append(high)
            high -= 1
    rows = [[(arm + shift) % n for arm in first] for shift in range(n)]
    if n % 2 == 1 and n > 1:
        rows += [list(reversed(row)) for row in rows]
    return rows


def derive_rng(*parts: object) -> random.Random:
    """A ``random.Random`` seeded from a SHA-256 of the parts (stable everywhere)."""
    text = "\x1f".join(str(p) for p in parts)
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def generate_run_id(now: datetime | None = None) -> str:
    """A fresh run id: ``run-<UTC timestamp>-<6 hex>``."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"run-{stamp}-{secrets.token_hex(3)}"


def _check_parts(what: str, one: str, values: Sequence[str]) -> None:
    if not values:
        raise InvalidInputError(f"no {what} to plan", reason=ReasonCode.INVALID_INPUT)
    for value in values:
        if not _ID_PART.match(value):
            raise InvalidInputError(
                f"invalid {one} '{value}': use letters, digits, '.', '_' or '-' (no ':'), at most 80",
                reason=ReasonCode.INVALID_INPUT,
            )
    duplicates = sorted({v for v in values if list(values).count(v) > 1})
    if duplicates:
        raise InvalidInputError(
            f"duplicate {what}: {', '.join(duplicates)}", reason=ReasonCode.INVALID_INPUT
        )


def _check_common(task_ids: Sequence[str], repetitions: int, run_id: str) -> None:
    _check_parts("run ids", "run id", [run_id])
    _check_parts("tasks", "task id", task_ids)
    if repetitions < 1:
        raise InvalidInputError(
            f"repetitions must be at least 1 (got {repetitions})", reason=ReasonCode.INVALID_INPUT
        )


def plan_schedule(
    task_ids: Sequence[str],
    arms: Sequence[str],
    repetitions: int,
    seed: int,
    run_id: str,
    quota_intervals: QuotaIntervalPlan | None = None,
) -> Schedule:
    """Evidence-eval schedule: one pair per (task, repetition), Williams-ordered arms;
    with ``quota_intervals``, one Williams row per block of repetitions, arm-major."""
    _check_common(task_ids, repetitions, run_id)
    _check_parts("arms", "arm", arms)
    per_row = quota_intervals.episodes_per_interval if quota_intervals else 1
    rows_needed = -(-repetitions // per_row)  # a row per repetition, or per block
    rows = williams_rows(len(arms))
    orders: dict[str, list[list[int]]] = {}
    for task_id in task_ids:
        rng = derive_rng("pairlab-williams-v1", seed, task_id)
        sequence: list[list[int]] = []
        while len(sequence) < rows_needed:
            block = [list(row) for row in rows]
            rng.shuffle(block)
            sequence.extend(block)
        orders[task_id] = sequence[:rows_needed]
    entries = []
    for index in range(rows_needed):  # repetition(block)-major: drift spreads over every task
        for task_id in task_ids:
            reps = range(index * per_row, min((index + 1) * per_row, repetitions))
            for position, arm_index in enumerate(orders[task_id][index]):
                arm = arms[arm_index]
                interval = f"{run_id}:{task_id}:q{index}:{arm}" if quota_intervals else None
                for repetition in reps:
                    pair_id = make_pair_id(run_id, task_id, repetition)
                    entries.append(
                        PlannedEpisode.of(
                            task_id, repetition, position, arm, pair_id, quota_interval=interval
                        )
                    )
    return Schedule(
        design="williams",
        run_id=run_id,
        seed=seed,
        arms=list(arms),
        repetitions=repetitions,
        entries=entries,
        quota_intervals=quota_intervals,
    )


def plan_canary(
    task_ids: Sequence[str],
    repetitions: int,
    seed: int,
    run_id: str,
    strata: Sequence[str] = DEFAULT_STRATA,
) -> Schedule:
    """Canary schedule: AB/BA alternating from a seeded start, per stratum and task.

    Pair ids are ``<runId>:<taskId>:<stratum>:<repetition>``, so a cold and a warm
    pair of the same task and repetition never share an id.
    """
    _check_common(task_ids, repetitions, run_id)
    _check_parts("strata", "stratum", strata)
    entries = []
    for stratum in strata:
        starts = {
            t: derive_rng("pairlab-canary-v1", seed, stratum, t).randrange(2) for t in task_ids
        }
        for repetition in range(repetitions):
            for task_id in task_ids:
                pair_id = make_pair_id(run_id, f"{task_id}:{stratum}", repetition)
                flip = (starts[task_id] + repetition) % 2
                arms = CANARY_ARMS if flip == 0 else CANARY_ARMS[::-1]
                entries += [
                    PlannedEpisode.of(task_id, repetition, position, arm, pair_id, stratum=stratum)
                    for position, arm in enumerate(arms)
                ]
    return Schedule(
        design="canary",
        run_id=run_id,
        seed=seed,
        arms=list(CANARY_ARMS),
        repetitions=repetitions,
        strata=list(strata),
        entries=entries,
    )
