"""The real CLIs, one module each (``claude``, ``codex``) defining a ``base.RealCli``
record (binary and version, final answer and own usage on stdout, transcript folder,
MCP servers offered, certify's planted config); ``registry`` holds them as
``REAL_CLIS`` and resolves the bundled binaries.
"""
