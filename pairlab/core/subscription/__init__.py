"""Subscription evidence of an evidence eval, per cohort (issue 16, item 2).

``units`` (episodes or a quota-aware run's intervals, paired), ``effects`` (paired
effects on each window's consumption: the token metrics' intervals and decision
rule), ``verdicts`` (the canary's quota rule per cohort and contrast, through
:mod:`pairlab.core.verdict.quota`) and ``section`` (all of it as the report's
``subscription`` JSON).
"""

from __future__ import annotations

from pairlab.core.subscription.section import analyse_subscription

__all__ = ["analyse_subscription"]
