"""The evidence-eval flow's parts (the flow itself is ``flows/evidence_eval.py``):
``episode`` (the shared EpisodeContext, one planned episode, the run-pair task),
``window`` (the sliding window of running pairs), ``progress`` (progress card and
log lines), ``dispatch`` and ``run_pair`` (work-pool mode), ``episode_attempt``,
``quota_block`` and ``warm_harvest``.
"""
