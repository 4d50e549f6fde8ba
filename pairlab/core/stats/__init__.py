"""Statistics for paired evaluations: bootstrap intervals, proportions, seeds, and the
skewness gate (:mod:`pairlab.core.stats.skew_gate`: which shapes the decision interval
may decide at a number of pairs).

Pure NumPy/SciPy; no knowledge of episodes or cohorts (that is
:mod:`pairlab.core.analysis.cohorts`).

Import from the modules (``bootstrap``, ``proportions``, ``seeds``, ``skew_gate``, ...):
the package imports nothing itself, so what needs only ``seeds`` or ``multiplicity`` (the
CLI's start, the study plan) does not load SciPy.
"""
