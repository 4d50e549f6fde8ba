"""The real CLIs: ``registry`` (``REAL_CLIS``: binaries, versions, wheels) and
``cli_output`` (final answer and own usage parsed from their stdout).
"""
