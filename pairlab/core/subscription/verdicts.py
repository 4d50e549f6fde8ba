"""The per-cohort subscription verdict: the canary's quota rules on a cohort's units.

For each contrast (treatment vs control) of a cohort, every pair of units (a
quota pair of a quota-aware run, else an episode pair) gives loom's quota
observations per window, built as the canary builds them from snapshots
(:func:`pairlab.core.canary.quota.quota_observations`: whole epoch seconds,
continuity, the coarser precision, the concurrent-use assessment), with the
control as loom's baseline and the treatment as its candidate. The verdict is
:func:`pairlab.core.verdict.quota.judge_pooled` of those pairs — every shared
interval judged together by ``judge_intervals``, the one implementation that
``pairlab compare`` uses: supported only when no interval is worse and at least
one shows a reduction beyond the summed precision; reset crossings, unknown
precision, concurrent use and unequal intervals make it inconclusive with the
canary's reason codes. Each pair's own verdict (``judge_subscription``, exactly
``pairlab compare``'s per pair) is kept beside it.

Only the account-wide provider's snapshots count (scoped windows such as
``claude:opus`` are other quotas). ``provider`` is the provider loom's artifact
names for the run's client (``claude`` or ``codex``); with none, no interval can
be expressed and the verdict is inconclusive (``missing-quota-telemetry``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from pairlab.core.analysis.metrics import Contrast
from pairlab.core.canary.quota import quota_observations
from pairlab.core.schemas.quota import QuotaObservation as Snapshot
from pairlab.core.subscription.units import CohortKey, QuotaUnit
from pairlab.core.verdict.artifact import Provider, QuotaObservation
from pairlab.core.verdict.outcome import Finding, Verdict
from pairlab.core.verdict.quota import (
    IntervalOutcome,
    SubscriptionJudgement,
    judge_pooled,
    judge_subscription,
)
from pairlab.core.verdict.reasons import VerdictReason

Observations = list[QuotaObservation] | None


def _account_wide(snapshots: Sequence[Snapshot] | None) -> list[Snapshot]:
    return [s for s in snapshots or [] if ":" not in s.provider]


def unit_observations(unit: QuotaUnit, provider: Provider) -> Observations:
    """loom's observations of one unit (None when no window can be expressed)."""
    found = quota_observations(
        provider,
        _account_wide(unit.start),
        _account_wide(unit.end),
        unit.unrelated_concurrent_use,
    )
    return None if found is None else [QuotaObservation.model_validate(o) for o in found]


def unit_pairs(
    units: Sequence[QuotaUnit], contrast: Contrast
) -> list[tuple[str, QuotaUnit, QuotaUnit]]:
    """(pair id, control unit, treatment unit) of every pair holding both arms, by pair id."""
    control = {u.pair_id: u for u in units if u.arm == contrast.control and not u.excluded}
    treated = {u.pair_id: u for u in units if u.arm == contrast.treatment and not u.excluded}
    return [(p, control[p], treated[p]) for p in sorted(control.keys() & treated.keys())]


def _no_provider(name: str | None) -> SubscriptionJudgement:
    finding = Finding(
        VerdictReason.MISSING_QUOTA_TELEMETRY,
        f"loom's quota observations name claude or codex only; this run's client "
        f"({name or 'unknown'}) has no such provider",
    )
    return SubscriptionJudgement(Verdict.INCONCLUSIVE, (finding,), ())


def judge_contrast(
    units: Sequence[QuotaUnit], contrast: Contrast, provider: Provider | None
) -> tuple[SubscriptionJudgement, list[tuple[str, SubscriptionJudgement]]]:
    """The cohort's pooled judgement for ``contrast`` and each pair's own."""
    if provider is None:
        return _no_provider(None), []
    pairs = unit_pairs(units, contrast)
    observed = [
        (pair_id, unit_observations(base, provider), unit_observations(cand, provider))
        for pair_id, base, cand in pairs
    ]
    pooled = judge_pooled([(b, c) for _p, b, c in observed])
    return pooled, [(p, judge_subscription(b, c)) for p, b, c in observed]


def _reason_counts(judgement: SubscriptionJudgement) -> dict[str, int]:
    return dict(sorted(Counter(str(f.reason) for f in judgement.findings).items()))


def verdict_json(
    contrast: Contrast,
    pooled: SubscriptionJudgement,
    per_pair: Sequence[tuple[str, SubscriptionJudgement]],
) -> dict[str, Any]:
    outcomes = Counter(str(c.outcome) for c in pooled.comparisons)
    return {
        "treatment": contrast.treatment,
        "control": contrast.control,
        "verdict": str(pooled.verdict),
        "pairs": len(per_pair),
        "intervals": {str(o): outcomes.get(str(o), 0) for o in IntervalOutcome},
        "reasons": _reason_counts(pooled),
        "findings": [{"reason": str(f.reason), "detail": f.detail} for f in pooled.findings],
        "perPair": [
            {
                "pairId": pair_id,
                "verdict": str(j.verdict),
                "reasons": sorted(map(str, j.reasons)),
                "comparisons": [c.to_json() for c in j.comparisons],
            }
            for pair_id, j in per_pair
        ],
    }


def cohort_verdicts(
    units: Sequence[QuotaUnit],
    contrasts: Sequence[Contrast],
    provider: Provider | None,
    *,
    client: str | None = None,
) -> dict[CohortKey, list[dict[str, Any]]]:
    """Per cohort, one verdict per contrast whose two arms have units in it."""
    by_key: dict[CohortKey, list[QuotaUnit]] = {}
    for unit in units:
        by_key.setdefault(unit.key, []).append(unit)
    out: dict[CohortKey, list[dict[str, Any]]] = {}
    for key in sorted(by_key):
        members = by_key[key]
        arms = {u.arm for u in members if not u.excluded}
        found = []
        for contrast in contrasts:
            if contrast.treatment not in arms or contrast.control not in arms:
                continue
            per_pair: list[tuple[str, SubscriptionJudgement]] = []
            if provider is None:
                pooled = _no_provider(client)
            else:
                pooled, per_pair = judge_contrast(members, contrast, provider)
            found.append(verdict_json(contrast, pooled, per_pair))
        out[key] = found
    return out


__all__ = ["cohort_verdicts", "judge_contrast", "unit_observations", "unit_pairs", "verdict_json"]
