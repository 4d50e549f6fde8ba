"""The episode wing: one episode's inputs and outputs.

``build`` (the spec and record parts), ``io`` (quota accounts, usage, the MCP ledger and
the final answer read back), ``grading`` and ``finding_evidence``. (The findings graph an
episode starts with is planted by the backends: ``backends.finding_seeds``.)
"""
