"""The canary trial: ``trial`` (the flow, a numbered recipe) and one module per step:
``manifest``, ``approval``, ``running``, ``judging``, ``publishing``.
"""
