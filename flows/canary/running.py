"""Running an approved canary (DESIGN 9, step 3): one run per scheduled quota interval.

The cold and warm strata (never combined) run with baseline/candidate
alternating AB/BA per repetition, one episode at a time on the trial's account.
Each run owns an interval of exactly ``quota_interval_s`` whole seconds that
starts on a whole second: "before" snapshot, run, collect and grade, write the
notification, wait for the interval's end, "after" snapshot (the quota bracket
:func:`pairlab.adapters.quota.account.quota_interval`, shared with the eval). loom's artifact
times quota observations in whole epoch seconds, so both arms' intervals then
have equal durations; a run that outlasts its interval is recorded as an
overrun and its interval is honestly longer (inconclusive, never stretched).

Warm start, for the simulator: the episode's graph dir starts pre-seeded with a
warm-start file (local backend) and ``PAIRLAB_STRATUM=warm`` is set (every
backend); the simulator's token draws do not read the graph, so the strata
differ in state, not in expected tokens. A real client's warm stratum is the
same hook: state present before the run.

Each run's evidence is written before its episode record, so a resumed trial
skips the runs that finished and never runs one twice.

A provider's rate limit or usage limit that ends a run stops the trial there: the run
is recorded excluded (``provider-limit``), nothing more runs, and a resume runs its
pair again whole (flows/canary/provider_limits.py).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from prefect import get_run_logger
from prefect.artifacts import update_progress_artifact

from flows.canary.account import run_arm, trial_environment
from flows.canary.evidence_files import evidence_name, load_evidence
from flows.canary.manifest import TRIALS, arm_effects
from flows.canary.provider_limits import (
    limit_message,
    limit_words,
    run_limit,
    set_aside_limited,
)
from flows.evidence.budget_gate import WindowCeiling
from flows.params import CanaryTrialParams
from pairlab.adapters.backends.base import ExecutionBackend, RunOutcome
from pairlab.adapters.backends.factory import make_backend
from pairlab.adapters.episode.build import episode_record, episode_spec
from pairlab.adapters.episode.session import CollectedEpisode, RunEnvironment
from pairlab.adapters.quota.account import QuotaBracket, quota_interval, snapshot_quota
from pairlab.adapters.run.directory import RunDir, safe_name
from pairlab.adapters.run.trial_inputs import open_sim_account
from pairlab.core.budget import decide_next_unit
from pairlab.core.canary import CheckResult, RunEvidence
from pairlab.core.provider_limit import PROVIDER_LIMIT, PROVIDER_LIMITED_DIR, ProviderLimit
from pairlab.core.schedule import PlannedEpisode, Schedule
from pairlab.core.schemas.catalog import LoadedSuite
from pairlab.core.schemas.episode import GraderCheck
from pairlab.core.schemas.profile import RunnerProfile
from pairlab.core.schemas.quota import QuotaObservation
from tasks.args import quoted
from tasks.episode import collect_and_grade, prepared_in_tasks, record_episode, run_episode
from tasks.report import progress_artifact

WARM_SEED_FILE: Final = "pairlab-warm-start.json"


def _seed_warm(prepared: Any, planned: PlannedEpisode) -> None:
    graph = Path(prepared.mounts["graph"])
    if prepared.backend == "local" and graph.is_dir():
        payload = {"stratum": "warm", "task_id": planned.task_id, "findings": []}
        (graph / WARM_SEED_FILE).write_text(json.dumps(payload) + "\n", encoding="utf-8")


def _notify(
    run_dir: RunDir, planned: PlannedEpisode, outcome: RunOutcome, checks: list[GraderCheck]
) -> float | None:
    """Persist the run's outcome where the operator reads it; returns the notification
    latency: from the start of the run until the operator can read its outcome (the
    agent's work plus collection and grading), never shorter than the run."""
    notice = {
        "episode_id": planned.episode_id,
        "arm": planned.arm,
        "exit_code": outcome.exit_code,
        "checks": {c.name: c.passed for c in checks},
    }
    run_dir.write_json(f"{TRIALS}/notifications/{safe_name(planned.episode_id)}.json", notice)
    if outcome.started_at is None:
        return None
    return max((time.time() - outcome.started_at.timestamp()) * 1000.0, 0.0)


def run_canary_episode(
    planned: PlannedEpisode,
    *,
    params: CanaryTrialParams,
    suite: LoadedSuite,
    profile: RunnerProfile,
    backend: ExecutionBackend,
    run_dir: RunDir,
    account_dir: Path | None,
    env: RunEnvironment | None = None,
) -> RunEvidence:
    """One run inside its scheduled quota interval; returns its evidence (persisted). A
    provider limit that ended it (the CLI's own words) excludes it, ``provider-limit``.
    ``env``: the trial's account environment (None without an account)."""
    entry = suite.task(planned.task_id)
    stratum = planned.stratum or "cold"
    extra_env = {"PAIRLAB_STRATUM": stratum}
    if profile.quota.probe == "sim":
        extra_env["PAIRLAB_SIM_EFFECTS"] = json.dumps(arm_effects(params, planned.arm))
    spec = episode_spec(
        run_arm(params, planned),  # on an account: the candidate runs the treated arm
        run_id=run_dir.run_id,
        suite=suite,
        entry=entry,
        profile=profile,
        model=params.model,
        seed=params.seed,
        keep_workspace=params.keep_workspaces,
        account_dir=account_dir,
        extra_env=extra_env,
    )
    episode_dir = run_dir.episode_dir(planned.episode_id)
    with prepared_in_tasks(backend, spec) as prepared:
        if stratum == "warm":
            _seed_warm(prepared, planned)
        with quota_interval(  # the account's charge log decides, else the operator's word
            profile,
            account_dir,
            params.quota_interval_s,
            own_episode_ids={planned.episode_id},
            asserted_concurrent_use=params.unrelated_concurrent_use,
        ) as bracket:
            outcome = run_episode(backend, prepared)
            collected = collect_and_grade(
                quoted(backend),
                quoted(prepared),
                profile=quoted(profile),
                task_entry=quoted(entry),
                outcome=quoted(outcome),
                episode_dir=episode_dir,
            )
            notification_ms = _notify(run_dir, planned, outcome, collected.checks)
    if env is not None:  # a rejected credential or an unreachable provider stops the trial
        env.stop_on_account_failure(outcome.stdout, collected.usage.vector)  # nothing recorded
    limit = run_limit(profile.client, outcome.stdout, episode_dir)
    record = episode_record(
        planned,
        run_id=run_dir.run_id,
        stratum=stratum,
        suite=suite,
        entry=entry,
        profile=profile,
        backend_name=backend.name,
        requested_model=params.model,
        outcome=outcome,
        collected=replace(collected, evidence=None),  # the canary records no finding evidence
        quota=bracket,
        include_transcript=False,
        limited=limit is not None,
    )
    evidence = _run_evidence(
        params, planned, stratum, outcome, collected, bracket, notification_ms, limit
    )
    # The evidence is written first: a record without evidence would be skipped on resume.
    run_dir.write_json(evidence_name(planned.episode_id), evidence.model_dump(mode="json"))
    record_episode(run_dir, record)
    return evidence


def _run_evidence(
    params: CanaryTrialParams,
    planned: PlannedEpisode,
    stratum: str,
    outcome: RunOutcome,
    collected: CollectedEpisode,
    bracket: QuotaBracket,
    notification_ms: float | None,
    limit: ProviderLimit | None = None,
) -> RunEvidence:
    """The run's evidence for the trial's judge: outcome, checks, usage, quota interval;
    excluded, and which limit, when a provider limit ended it."""
    usage = collected.usage
    return RunEvidence(
        episode_id=planned.episode_id,
        pair_id=planned.pair_id,
        task_id=planned.task_id,
        stratum=stratum,
        repetition=planned.repetition,
        order=planned.order,
        arm=planned.arm,
        exit_code=outcome.exit_code,
        timed_out=outcome.timed_out,
        checks=[CheckResult(name=c.name, passed=c.passed) for c in collected.checks],
        observed_model=usage.primary_model,
        usage=usage.vector,
        usage_provenance=usage.provenance_counts(),
        critical_path_ms=outcome.latency_ms,
        notification_ms=notification_ms,
        quota_before=bracket.before,
        quota_after=bracket.after,
        interval_scheduled_s=params.quota_interval_s,
        interval_overrun=bracket.overrun,
        excluded_reason=PROVIDER_LIMIT if limit is not None else None,
        limit_kind=limit.kind if limit is not None else None,
    )


def trial_account(params: CanaryTrialParams, profile: RunnerProfile, trial_id: str) -> Path | None:
    """The simulator's private account for this trial (opened once); None for real clients."""
    if profile.quota.probe != "sim":
        return None
    account_dir = (Path(params.work_dir) / "sim-accounts" / trial_id).resolve()
    if not (account_dir / "quota.json").exists():
        open_sim_account(
            account_dir,
            {
                "five-hour": params.sim_five_hour_budget_tokens,
                "seven-day": params.sim_seven_day_budget_tokens,
            },
        )
    return account_dir


def trial_windows(profile: RunnerProfile, run_dir: RunDir) -> list[QuotaObservation] | None:
    """The account's windows read now, before approval, through the profile's quota probe
    (a registered account: its provider's usage endpoint), kept as
    ``trials/windows-before-approval.json``: what the approver saw. None for the
    simulator: its trial account is opened only once the trial is approved (nothing exists
    for a trial that never runs) and is fresh by construction: all of each window remains."""
    if profile.quota.probe == "sim":
        return None
    windows = snapshot_quota(profile, None)
    run_dir.write_json(
        "trials/windows-before-approval.json", [o.model_dump(mode="json") for o in windows]
    )
    return windows


class TrialProgress:
    """What an operator following a trial sees, like an eval's: a progress card and one
    Logs-tab line per run's start and end (repetitions and ids count from 0)."""

    def __init__(self, trial_id: str, total: int) -> None:
        self.trial_id, self.total, self.finished_runs = trial_id, total, 0
        self._logger: Any = get_run_logger()
        self.artifact_id = progress_artifact(0.0, self.text())

    def text(self) -> str:
        percent = 100.0 * self.finished_runs / self.total if self.total else 100.0
        return f"{self.finished_runs}/{self.total} runs ({percent:.0f}%) of trial {self.trial_id}"

    def _what(self, planned: PlannedEpisode) -> str:
        stratum = planned.stratum or "cold"
        return f"{planned.task_id} {stratum} rep {planned.repetition} ({planned.arm})"

    def started(self, planned: PlannedEpisode) -> None:
        self._logger.info(
            "run %d/%d start: %s", self.finished_runs + 1, self.total, self._what(planned)
        )

    def finished(self, planned: PlannedEpisode, *, earlier: bool) -> None:
        self.finished_runs += 1
        self._logger.info(
            "run %d/%d %s: %s",
            self.finished_runs,
            self.total,
            "recorded by an earlier attempt" if earlier else "end",
            self._what(planned),
        )
        update_progress_artifact(
            artifact_id=self.artifact_id,
            progress=100.0 * self.finished_runs / self.total,
            description=self.text(),
        )


@dataclass
class TrialRuns:
    """What :func:`run_trial` ran: every run's evidence, and why it stopped early (None: it
    did not; else the ceiling's words, budget-exhausted), or the provider limit that
    stopped it (``limited``: the limit's words; the limited run is the last evidence)."""

    evidence: list[RunEvidence]
    stopped: str | None = None
    limited: str | None = None


def _window_ceiling(
    params: CanaryTrialParams, profile: RunnerProfile, account_dir: Path | None, run_dir: RunDir
) -> WindowCeiling | None:
    if params.budget_window_percent is None:
        return None
    ceiling = WindowCeiling(
        params.budget_window_percent, lambda: snapshot_quota(profile, account_dir), run_dir
    )
    ceiling.load()  # the trial's start, before its first run (kept by a resume)
    return ceiling


def run_trial(
    params: CanaryTrialParams,
    trial_id: str,
    schedule: Schedule,
    suite: LoadedSuite,
    profile: RunnerProfile,
    run_dir: RunDir,
) -> TrialRuns:
    """Every planned run, strictly one after another (one quota interval at a time);
    runs whose evidence exists (a resumed trial) are not run again. With a ceiling
    (``budget_tokens``, ``budget_window_percent``), before each AB/BA pair's first run
    the pair runs only while every ceiling holds (the eval's rules: core/budget.py over
    the recorded runs' billed tokens, core/budget_window.py over a fresh reading of the
    account's windows; the trial's runs are its episodes); a stop leaves the rest unrun.
    A run a provider limit ended stops the trial after it (flows/canary/provider_limits.py);
    a resume first sets that pair aside, so it runs again whole.
    On an account the runs go through its environment (flows/canary/account.py), opened
    here, once approved, and closed at the end; ``profile`` is then the one before the
    account is wired (the environment wires it, on Docker with the provider's URL as the
    run network reaches it)."""
    run_dir.ensure()
    env = trial_environment(params, profile, run_dir)
    try:
        return _run_planned(params, trial_id, schedule, suite, profile, run_dir, env)
    finally:
        if env is not None:
            env.close()


def _run_planned(
    params: CanaryTrialParams,
    trial_id: str,
    schedule: Schedule,
    suite: LoadedSuite,
    profile: RunnerProfile,
    run_dir: RunDir,
    env: RunEnvironment | None,
) -> TrialRuns:
    account_dir = trial_account(params, profile, trial_id)
    if env is not None:
        backend, profile = env.backend, env.profile
    else:
        backend = make_backend(params.backend, run_id=trial_id)
    replanned = set_aside_limited(run_dir, schedule.entries)
    if replanned:
        get_run_logger().info(
            "trial %s: %d pair(s) a provider limit ended run again: %s (the earlier attempts "
            "are kept in %s/ and %s/)",
            trial_id,
            len(replanned),
            ", ".join(sorted(replanned)),
            f"{TRIALS}/{PROVIDER_LIMITED_DIR}",
            PROVIDER_LIMITED_DIR,
        )
    evidence: list[RunEvidence] = []
    progress = TrialProgress(trial_id, len(schedule.entries))
    ceiling = _window_ceiling(params, profile, account_dir, run_dir)
    decided_pairs: set[str] = set()
    for planned in schedule.entries:
        done = load_evidence(run_dir, planned.episode_id)
        earlier = done is not None
        if done is None and planned.pair_id not in decided_pairs:
            decided_pairs.add(planned.pair_id)
            stop = _pair_stop(params, ceiling, schedule, planned.pair_id, run_dir)
            if stop is not None:
                get_run_logger().warning(
                    "trial %s: budget ceiling reached, no further pair runs (%s)", trial_id, stop
                )
                _close_trial(run_dir, schedule)
                return TrialRuns(evidence, stopped=stop)
        if done is None:
            progress.started(planned)
            done = run_canary_episode(
                planned,
                params=params,
                suite=suite,
                profile=profile,
                backend=backend,
                run_dir=run_dir,
                account_dir=account_dir,
                env=env,
            )
        evidence.append(done)
        progress.finished(planned, earlier=earlier)
        if done.excluded_reason == PROVIDER_LIMIT:  # nothing more runs on this account now
            words = limit_words(done, limit_message(run_dir, done.episode_id))
            get_run_logger().warning(
                "trial %s: a provider limit ended a run, excluded as provider-limit; no "
                "further run starts, its pair runs again on resume (%s)",
                trial_id,
                words,
            )
            _close_trial(run_dir, schedule)
            return TrialRuns(evidence, limited=words)
    _close_trial(run_dir, schedule)
    return TrialRuns(evidence)


def _pair_stop(
    params: CanaryTrialParams,
    ceiling: WindowCeiling | None,
    schedule: Schedule,
    pair_id: str,
    run_dir: RunDir,
) -> str | None:
    """Why the pair may not start (the ceilings' words), or None: it may."""
    if params.budget_tokens is None and ceiling is None:
        return None
    todo = [
        e
        for e in schedule.entries
        if e.pair_id == pair_id and load_evidence(run_dir, e.episode_id) is None
    ]
    records = list(run_dir.completed().values())
    if params.budget_tokens is not None:
        decision = decide_next_unit(
            [r.total_tokens for r in records],
            ceiling_tokens=params.budget_tokens,
            next_episodes=len(todo),
        )
        if decision.admission == "stop":
            return decision.text()
    if ceiling is not None:
        admission, words = ceiling.decide(records, len(todo), 0)
        if admission != "start":
            return words
    return None


def _close_trial(run_dir: RunDir, schedule: Schedule) -> None:
    records = run_dir.completed()
    run_dir.write_episodes_jsonl(records.values(), [e.episode_id for e in schedule.entries])
