"""Which budget ceilings a run has, and what an account allows, checked before anything runs.

* ``budget_window_percent`` on an account without a subscription window (an API key) is
  refused, ``no-subscription-window`` (exit 2): there is nothing to read it against.
* A run on an account with subscription windows (a subscription question) runs its pairs
  one at a time (a canary trial always does): ``concurrency`` above 1 is refused
  (``invalid-input``): overlapping episodes on one account make every window reading the
  sum of both, and the percent ceiling's estimate with them.
* :func:`budget_gate` builds the run's gate (flows/evidence/budget_gate.py) from the
  ceilings it has, or None; the percent ceiling reads the windows through the run
  profile's quota probe (a registered account: its provider's usage endpoint), and takes
  the run's starting reading now, before the first pair.
"""

from __future__ import annotations

from pathlib import Path

from flows.evidence.budget_gate import BudgetGate, WindowCeiling
from flows.evidence.progress import PairProgress
from flows.params import CanaryTrialParams, EvidenceEvalParams
from pairlab.adapters.quota.account import snapshot_quota
from pairlab.adapters.run.directory import RunDir
from pairlab.core.accounts import has_subscription_window
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.profile import RunnerProfile


def has_ceiling(params: EvidenceEvalParams | CanaryTrialParams) -> bool:
    return params.budget_tokens is not None or params.budget_window_percent is not None


def check_account_budget(params: EvidenceEvalParams | CanaryTrialParams) -> None:
    """The module doc's refusals (the account's record only: no credential is read); the
    eval's and the canary trial's (whose runs are one at a time by construction)."""
    if params.account is None:
        return
    concurrency = params.concurrency if isinstance(params, EvidenceEvalParams) else 1
    from pairlab.adapters.accounts.selection import open_account_store

    account = open_account_store().record(params.account)
    windowed = has_subscription_window(account.kind)
    if params.budget_window_percent is not None and not windowed:
        raise InvalidInputError(
            f"account {account.name!r} is an {account.kind}: it has no subscription window, so "
            f"a ceiling of {params.budget_window_percent:g}% of one cannot hold; give a token "
            "ceiling instead (--budget-tokens, budget_tokens)",
            reason=ReasonCode.NO_SUBSCRIPTION_WINDOW,
        )
    if windowed and concurrency != 1:
        raise InvalidInputError(
            f"account {account.name!r} is a subscription ({account.kind}): its pairs run one "
            f"at a time (concurrency 1, not {concurrency}), or every window reading "
            "would hold overlapping episodes",
            reason=ReasonCode.INVALID_INPUT,
        )


def budget_gate(
    params: EvidenceEvalParams,
    run_id: str,
    progress: PairProgress,
    profile: RunnerProfile,
    account_dir: Path | None,
    run_dir: RunDir,
) -> BudgetGate | None:
    """The run's gate over the ceilings it has (None: no ceiling)."""
    if not has_ceiling(params):
        return None
    window = None
    if params.budget_window_percent is not None:
        window = WindowCeiling(
            params.budget_window_percent,
            lambda: snapshot_quota(profile, account_dir),
            run_dir,
        )
        window.load()  # the run's start: read before the first pair (kept by a resume)
    return BudgetGate(run_id, progress, ceiling_tokens=params.budget_tokens, window=window)


__all__ = ["budget_gate", "check_account_budget", "has_ceiling"]
