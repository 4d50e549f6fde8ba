"""Where ``pairlab report`` finds a finished run's stored inputs.

A source is a run directory (a staging dir ``<work>/runs/<id>``, a pulled run, or
a local store's ``<store>/runs/<id>``) or a store URL ``<store>/runs/<id>``
(``s3://bucket/prefix/runs/<id>``), which is first pulled — every object verified
against the manifest — by :func:`pairlab.adapters.store.runs.pull_run`.

The inputs are the run's ``run.json``, ``plan.json``, ``episodes.jsonl`` and
``quota-intervals.jsonl`` (quota-aware runs). A run written before ``run.json``
existed is read from its ``report.json`` ``meta`` instead (its quota provider
is then unknown: no subscription verdict can be expressed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pairlab.adapters.run.quota_interval_files import read_intervals_jsonl
from pairlab.core.analysis.study_plan import FROZEN_PLAN_NAME, ResolvedPlan, read_frozen_plan
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.quota.intervals import QuotaIntervalRecord
from pairlab.core.report.run import (
    RUN_SETTINGS_NAME,
    RenderedReport,
    RunSettings,
    analyse_run,
    render_run_report,
)
from pairlab.core.schemas.episode import EpisodeRecord, parse_episode_line

EPISODES_FILE = "episodes.jsonl"


@dataclass(frozen=True)
class StoredRun:
    path: Path
    settings: RunSettings
    records: list[EpisodeRecord]
    intervals: list[QuotaIntervalRecord]
    plan: ResolvedPlan

    def render(self) -> RenderedReport:
        """The run's report, recomputed from these inputs (nothing is re-run)."""
        analysis = analyse_run(self.records, self.settings, self.plan)
        return render_run_report(self.settings, self.records, self.intervals, self.plan, analysis)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(
            f"{path}: unreadable ({exc.__class__.__name__})", reason=ReasonCode.INPUT_READ_FAILED
        ) from exc


def _settings_from_meta(path: Path) -> RunSettings:
    """Settings of a run that predates ``run.json``, from its ``report.json`` meta."""
    report = _read_json(path / "report.json")
    meta = report.get("meta") if isinstance(report, dict) else None
    if not isinstance(meta, dict):
        raise InvalidInputError(
            f"{path}: neither {RUN_SETTINGS_NAME} nor a report.json with its meta: not a "
            "finished evidence-eval run",
            reason=ReasonCode.NOT_FOUND,
        )
    return RunSettings.model_validate(
        {
            "run_id": meta.get("run_id") or path.name,
            "suite": meta.get("suite"),
            "profile": meta.get("profile"),
            "backend": meta.get("backend"),
            "arms": meta.get("arms"),
            "repetitions": meta.get("repetitions"),
            "seed": meta.get("seed"),
            "client": meta.get("client"),
            "include_transcript": bool(meta.get("include_transcript")),
            "gate": meta.get("min_pairs"),
        }
    )


def read_settings(path: Path) -> RunSettings:
    settings_path = path / RUN_SETTINGS_NAME
    try:
        if settings_path.is_file():
            return RunSettings.model_validate(_read_json(settings_path))
        if (path / "report.json").is_file():
            return _settings_from_meta(path)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "settings"
        raise InvalidInputError(
            f"{path}: invalid run settings: {where}: {first['msg']}",
            reason=ReasonCode.MALFORMED_INPUT,
        ) from exc
    raise InvalidInputError(
        f"{path}: no {RUN_SETTINGS_NAME} or report.json: not a finished evidence-eval run "
        "(a canary trial's report is `pairlab compare`'s)",
        reason=ReasonCode.NOT_FOUND,
    )


def read_records(path: Path) -> list[EpisodeRecord]:
    episodes = path / EPISODES_FILE
    if not episodes.is_file():
        raise InvalidInputError(f"{path}: no {EPISODES_FILE}", reason=ReasonCode.NOT_FOUND)
    text = episodes.read_text(encoding="utf-8")
    return [
        parse_episode_line(line, number, str(episodes))
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]


def load_stored_run(path: Path) -> StoredRun:
    """A finished run's stored inputs (clear errors, exit 2, when one is missing)."""
    if not path.is_dir():
        raise InvalidInputError(f"{path}: no such run directory", reason=ReasonCode.NOT_FOUND)
    settings = read_settings(path)
    plan_path = path / FROZEN_PLAN_NAME
    if not plan_path.is_file():
        raise InvalidInputError(
            f"{path}: no {FROZEN_PLAN_NAME} (the study plan frozen when the run started)",
            reason=ReasonCode.NOT_FOUND,
        )
    try:
        intervals = read_intervals_jsonl(path)
    except ValidationError as exc:
        raise InvalidInputError(
            f"{path}: unreadable quota-intervals.jsonl ({exc.error_count()} errors)",
            reason=ReasonCode.MALFORMED_INPUT,
        ) from exc
    return StoredRun(
        path=path,
        settings=settings,
        records=read_records(path),
        intervals=intervals,
        plan=read_frozen_plan(plan_path),
    )


def is_store_run_url(source: str) -> bool:
    """``s3://…/runs/<id>`` or ``file://…/runs/<id>``: a run in a store, to pull first."""
    return source.startswith(("s3://", "file://"))


def locate_run(source: str, pull_to: Path | None) -> Path:
    """The local directory of ``source``, pulling a store URL into ``pull_to``
    (default ``./runs/<id>``, as ``pairlab pull`` does)."""
    if not is_store_run_url(source):
        return Path(source)
    from pairlab.adapters.store import open_store
    from pairlab.adapters.store.runs import pull_run, split_run_url

    store_url, run_id = split_run_url(source)
    dest = pull_to if pull_to is not None else Path("runs") / run_id
    pull_run(open_store(store_url), run_id, dest)
    return dest


__all__ = [
    "StoredRun",
    "is_store_run_url",
    "load_stored_run",
    "locate_run",
    "read_records",
    "read_settings",
]
