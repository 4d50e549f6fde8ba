"""A canary trial on a real CLI with a registered account (docs/accounts.md, docs/canary.md).

A real CLI has no implementation-revision knob (the simulator's ``PAIRLAB_SIM_EFFECTS``),
so its trial compares what an eval compares: **baseline** = the profile's stripped
baseline arm, **candidate** = the intervention's treated arm (``treated_arm`` of
``intervention``), each wired exactly as the eval wires it (its args, its environment,
its graph seed). The schedule, the evidence and loom's artifact keep the canary's arm
names; only the episode the backend runs is the eval arm's (:func:`run_arm`).

The credential is handled as the eval handles it, by the same code: the profile is
wired with the account's record alone before approval (its provider URL, its quota
probe naming the account, never the credential: :func:`account_profile`), and the
environment that hands the credential to the backend's host env or secret files is
opened only once the trial is approved (:func:`trial_environment`,
``adapters/episode/session.open_run_environment``). Nothing of it reaches the
parameters, the manifest, logs, artifacts or the store.

A profile that runs against the provider emulator without an account stays refused
(flows/canary/manifest.canary_profile): the emulator's scripted model plays both arms the
same, and a canary is for spending a real account's quota under an approval.
"""

from __future__ import annotations

from pathlib import Path

from flows.params import CanaryTrialParams
from pairlab.adapters.episode.session import RunEnvironment
from pairlab.adapters.run.directory import RunDir
from pairlab.core.account_certification import CertificationStatus
from pairlab.core.intervention_wiring import planned_treated_arm
from pairlab.core.schedule import PlannedEpisode
from pairlab.core.schemas.profile import RunnerProfile

CANDIDATE = "candidate"


def account_profile(params: CanaryTrialParams, profile: RunnerProfile) -> RunnerProfile:
    """The profile as the trial's account runs it, from the account's record only (no
    credential read): what the manifest freezes and the windows are read with. Without
    an account: the profile unchanged."""
    if params.account is None:
        return profile
    from pairlab.adapters.accounts.episode_wiring import account_run_profile
    from pairlab.adapters.accounts.selection import open_account_store

    return account_run_profile(profile, open_account_store().record(params.account))


def account_certification(params: CanaryTrialParams) -> CertificationStatus | None:
    """The account's certification as it stands now, for the approval (from its record
    alone: no credential read); None without an account."""
    if params.account is None:
        return None
    from pairlab.adapters.accounts.certification import certification_here
    from pairlab.adapters.accounts.selection import open_account_store

    return certification_here(open_account_store().record(params.account))


def trial_environment(
    params: CanaryTrialParams, profile: RunnerProfile, run_dir: RunDir
) -> RunEnvironment | None:
    """The approved trial's environment on its account (the eval's: the credential only
    in the backend's host env or secret files; on Docker the run network to the account's
    provider); None without an account (the simulator: a plain backend). A missing
    credential is ``credential-missing`` (exit 3) here, before the first run."""
    if params.account is None:
        return None
    from pairlab.adapters.episode.session import open_run_environment

    return open_run_environment(
        profile,
        backend_name=params.backend,
        run_id=run_dir.run_id,
        ledger_dir=Path(run_dir.path) / "emulator",
        with_provider=False,
        account=params.account,
    )


def with_treated_arm(params: CanaryTrialParams, profile: RunnerProfile) -> CanaryTrialParams:
    """``params`` with the treated arm an account's candidate runs resolved against the
    wired ``profile`` (none given: the widest arm the intervention supports,
    ``planned_treated_arm``), once when the trial starts: the frozen manifest's candidate
    revision names it. The simulator's trial has no treated arm (left as given)."""
    if params.account is None:
        return params
    arm = planned_treated_arm(params.treated_arm, profile.arm_args)
    return params.model_copy(update={"treated_arm": arm})


def run_arm(params: CanaryTrialParams, planned: PlannedEpisode) -> PlannedEpisode:
    """The episode the backend runs for a planned canary run: on an account the candidate
    runs the intervention's treated arm (the eval's wiring of ``treated_arm``), the
    baseline the baseline arm; the simulator's arms run as planned."""
    if params.account is None or planned.arm != CANDIDATE:
        return planned
    return planned.model_copy(update={"arm": params.treated_arm})


__all__ = [
    "CANDIDATE",
    "account_certification",
    "account_profile",
    "run_arm",
    "trial_environment",
    "with_treated_arm",
]
