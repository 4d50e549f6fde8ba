"""The analysis wing: paired cohorts in, calibrated decisions out.

``cohorts`` (aggregation entry), ``engine``/``worker`` (the kernels, in process or in worker
processes), ``result`` (``CohortAnalysis``, the analysis result), ``table`` (its rows),
``decisions`` (how a win is decided), ``metrics``, ``study_plan`` (the pre-registered
analysis plan) and ``power`` (sample-size planning).
"""
