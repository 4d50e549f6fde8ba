"""The episode wing: one episode's inputs and outputs.

``build`` (the spec and record parts), ``io`` (quota accounts, usage, the MCP ledger and
the final answer read back), ``grading``, ``finding_evidence`` and ``finding_seeds``.
"""
