"""The certify wing: proof that baseline isolation holds.

``report`` (the report types both certifiers build), ``sim`` (certification against the
simulated client, and the dispatch to ``live``), ``sim_probe`` (the simulator's isolation
probe), ``live`` (the real CLIs: flag ablations, the planted item x arm matrix), ``live_probe``
(its probe episodes and what each one shows),
``planted_config`` and ``planted_mcp_server`` (how items are planted; which items,
each CLI's record in ``adapters.clients`` says).
"""
