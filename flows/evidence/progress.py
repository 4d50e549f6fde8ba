"""What an operator following an eval sees while its pairs run: the progress card, the
progress events, and one Logs-tab line per pair start, pair end and failed episode.

An incorrect answer is data (INFO: the Logs tab, not the console), labelled as such; a
run that failed or was excluded is a warning. Repetitions count from 0, as in the ids.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from prefect import get_run_logger
from prefect.artifacts import update_progress_artifact

from flows.run_ui import failure_reason, pair_text
from pairlab.adapters.run import progress_events
from pairlab.core.schedule import PlannedEpisode
from pairlab.core.schemas.episode import EpisodeRecord
from tasks.report import progress_artifact

Unit = list[PlannedEpisode]


class PairProgress:
    """Counts episodes as their pairs finish and keeps every record by episode id
    (``records`` starts with those an earlier attempt finished)."""

    def __init__(
        self,
        run_id: str,
        total: int,
        done: dict[str, EpisodeRecord],
        pending: Sequence[Unit],
        limits: Sequence[str] = (),
    ) -> None:
        self.run_id = run_id
        self.limits = list(limits)  # what the run cannot answer, said on the card throughout
        self.records: dict[str, EpisodeRecord] = dict(done)
        self.prog = progress_events.Progress(total=total, skipped=len(done))
        self.pending = len(pending)
        self._no = {id(p): i + 1 for i, p in enumerate(pending)}
        self._logger: Any = get_run_logger()
        self.artifact_id = progress_artifact(self.prog.percent(), self.text())
        progress_events.notify(self.prog)

    def text(self) -> str:
        """The progress card's line: done/total in words (the card shows no bar)."""
        prog = self.prog
        finished = prog.done + prog.skipped
        text = f"{finished}/{prog.total} episodes ({prog.percent():.0f}%) of run {self.run_id}"
        if prog.skipped:
            text += f", {prog.skipped} from an earlier attempt"
        text += f"; {prog.failed} failed or incorrect" if prog.failed else ""
        return text + "".join(f" · {label}" for label in self.limits)

    def started(self, pair: Unit) -> None:
        self._logger.info("pair %d/%d start: %s", self._no[id(pair)], self.pending, pair_text(pair))

    def failed(self, pair: Unit, exc: BaseException) -> None:
        self._logger.error(
            "pair %d/%d failed: %s: %s: %s",
            self._no[id(pair)],
            self.pending,
            pair_text(pair),
            type(exc).__name__,
            exc,
        )

    def finished(self, pair: Unit, pair_records: list[EpisodeRecord]) -> None:
        prog = self.prog
        for rec in pair_records:
            if rec.episode_id in self.records:
                continue
            self.records[rec.episode_id] = rec
            prog.done += 1
            if (why := failure_reason(rec)) is not None:
                prog.failed += 1
                ok = rec.success and not (rec.excluded or rec.timed_out)
                self._logger.log(
                    logging.INFO if ok else logging.WARNING,
                    "episode %s (%s, %s, rep %s) %s: %s",
                    rec.episode_id,
                    rec.task_id,
                    rec.arm,
                    rec.repetition,  # from 0, as in the episode id
                    "did not count (an outcome, recorded)" if ok else "failed",
                    why,
                )
        self._logger.info(
            "pair %d/%d end: %s; %d/%d episodes done, %d failed",
            self._no[id(pair)],
            self.pending,
            pair_text(pair),
            prog.done + prog.skipped,
            prog.total,
            prog.failed,
        )
        update_progress_artifact(
            artifact_id=self.artifact_id, progress=prog.percent(), description=self.text()
        )
        progress_events.notify(prog)


__all__ = ["PairProgress"]
