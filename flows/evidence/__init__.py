"""The evidence-eval flow's parts (the flow itself is ``flows/evidence_eval.py``):
``dispatch``, ``run_pair``, ``episode_attempt``, ``quota_block`` and ``warm_harvest``.
"""
