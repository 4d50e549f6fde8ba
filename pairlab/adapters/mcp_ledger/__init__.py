"""The MCP measurement ledger (not the emulator's request ledger): ``db`` (the SQLite
ledger an intervention writes) and ``audit`` (reading it back for ``pairlab audit``).
"""
