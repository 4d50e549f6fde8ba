"""The analysis wing: paired cohorts in, calibrated decisions out.

``cohorts`` (aggregation entry; the pairing gate), ``pairing`` (the frame, arms, contrasts and
paired samples), ``engine``/``worker`` (the kernels, in process or in worker processes),
``result`` (``CohortAnalysis``, the analysis result), ``table`` (its rows), ``decisions``
(how a win is decided, and the one table of decision words), ``metrics``, ``study_plan`` (the
pre-registered analysis plan), ``power`` (sample-size planning) and ``power_study`` (the
rules ``pairlab power`` applies: alpha per test, metric per contrast, the value to register).
"""
