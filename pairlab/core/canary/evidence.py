"""What one executed canary episode contributes (``trials/evidence/<episode>.json``).

Written per episode before its record, so a resumed trial skips it. Only
identifiers, statuses, numbers and times: no prompt, output, path or secret.
A missing measurement stays ``None``, never zero.

A run a provider's rate limit or usage limit ended (:mod:`pairlab.core.provider_limit`)
did not measure the arm: its evidence says ``excluded_reason: provider-limit`` and which
limit (``limit_kind``), it never enters loom's artifact (its pair is incomplete), and a
resume sets the pair's evidence aside and runs the pair again.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pairlab.core.canary.manifest import FrozenModel, PlannedRun
from pairlab.core.schemas.quota import QuotaObservation
from pairlab.core.schemas.usage import UsageVector


class CheckResult(FrozenModel):
    name: str
    passed: bool | None


class RunEvidence(PlannedRun):
    """Its planned identity (the inherited fields, first on the wire) and what it did."""

    exit_code: int | None
    timed_out: bool
    checks: list[CheckResult]
    observed_model: str | None
    usage: UsageVector | None
    usage_provenance: dict[str, int] | None  # the usage reader's record classes
    critical_path_ms: float | None = Field(default=None, ge=0)
    notification_ms: float | None = Field(default=None, ge=0)
    quota_before: list[QuotaObservation]
    quota_after: list[QuotaObservation]
    interval_scheduled_s: float
    interval_overrun: bool  # the episode and its grading outlasted the scheduled interval
    excluded_reason: Literal["provider-limit"] | None = None  # not judged, and why
    limit_kind: Literal["rate-limit", "usage-limit"] | None = None  # which provider limit
