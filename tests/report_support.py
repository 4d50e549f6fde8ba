"""A finished run's stored inputs written by hand, for the report's unit tests.

Records of two models (two headline groups), three tasks and three arms, with
token usage (some metrics never observed: null in every episode), list prices,
grades and quota snapshots around each episode (equal one-minute intervals, so
the canary rule can judge them). ``full`` saves ~30% of every token dimension and
the quota with it; ``optimizer`` saves nothing; one task's ``full`` regresses on
correctness in one model. Every number is drawn from a seeded generator.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pairlab.core.analysis.study_plan import ResolvedPlan, default_plan, frozen_plan_bytes
from pairlab.core.quota.consumption import interval_consumption
from pairlab.core.report.run import RunSettings
from pairlab.core.schemas.episode import EpisodeRecord
from pairlab.core.schemas.quota import QuotaObservation

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RESET = T0 + timedelta(hours=5)
RUN_ID = "run-report"
ARMS = ("baseline", "optimizer", "full")
TASKS = ("fix-median", "answer-cache-env", "write-tests-slugify")
MODELS = ("model-a", "model-b")
PLAN = ResolvedPlan.of(default_plan(5), "default")


def _snap(window: str, used: float, at: datetime) -> QuotaObservation:
    return QuotaObservation(
        provider="sim",
        window=window,
        used_percent=used,
        precision_percent=1.0,
        resets_at=RESET,
        reset_id=f"{window}-1",
        observed_at=at,
        source="test",
    )


def stored_records(pairs: int = 6, seed: int = 1) -> list[EpisodeRecord]:
    rng = random.Random(seed)
    records = []
    used = {(m, t): 0.0 for m in MODELS for t in TASKS}  # an account per model and task
    at = T0
    for model in MODELS:
        for task in TASKS:
            for rep in range(pairs):
                base = 20_000 + rng.randint(-1_500, 1_500)
                for arm in ARMS:
                    factor = 0.7 if arm == "full" else 1.0
                    total = round(base * factor * rng.uniform(0.97, 1.03))
                    points = 5.0 if arm != "full" else 2.0
                    before = [_snap(w, used[(model, task)], at) for w in ("five-hour", "seven-day")]
                    after_at = at + timedelta(minutes=1)
                    after = [
                        _snap("five-hour", used[(model, task)] + points, after_at),
                        _snap("seven-day", used[(model, task)] + points / 4, after_at),
                    ]
                    used[(model, task)] += points
                    wrong = model == "model-b" and task == "fix-median" and arm == "full"
                    pair_id = f"{RUN_ID}:{task}:{rep}"
                    records.append(
                        EpisodeRecord(
                            episode_id=f"{pair_id}:{arm}:{model}",
                            pair_id=pair_id,
                            run_id=RUN_ID,
                            arm=arm,
                            client="sim",
                            client_version="1.0.0",
                            model=model,
                            task_id=task,
                            success=True,
                            correct=not (wrong and rep < 5),
                            total_tokens=total,
                            uncached_input_tokens=total // 10,
                            output_tokens=total // 20,
                            latency_ms=1000.0 + rng.uniform(-50, 50),
                            api_list_price_usd=total * 3e-6,
                            price_catalog_version="2026-11-29",
                            join_method="exact",
                            started_at=at,
                            ended_at=after_at,
                            quota_before=before,
                            quota_after=after,
                            quota_consumption=interval_consumption(before, after, False),
                            unrelated_concurrent_quota_use=False,
                            concurrent_use_basis="simulator-charge-log",
                        )
                    )
                    at = after_at + timedelta(seconds=5)
    return records


def settings(**overrides: Any) -> RunSettings:
    fields: dict[str, Any] = {
        "run_id": RUN_ID,
        "suite": "core",
        "profile": "sim",
        "backend": "local",
        "arms": list(ARMS),
        "repetitions": 6,
        "seed": 0,
        "client": "sim",
        "gate": 5,
        "quota_provider": "claude",
        "resamples": 1000,
    }
    return RunSettings.model_validate(fields | overrides)


def write_stored_run(root: Path, records: list[EpisodeRecord] | None = None) -> Path:
    """A run directory holding exactly the report's stored inputs."""
    run = root / RUN_ID
    run.mkdir(parents=True)
    chosen = stored_records() if records is None else records
    (run / "episodes.jsonl").write_text("".join(r.to_json_line() + "\n" for r in chosen))
    (run / "plan.json").write_bytes(frozen_plan_bytes(PLAN))
    (run / "run.json").write_text(settings().to_json_text())
    return run


def report_json(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "report.json").read_text())
    return data
