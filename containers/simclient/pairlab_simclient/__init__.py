"""simclient: a deterministic, stdlib-only coding-agent CLI simulator (DESIGN 4).

It is invoked like the real client CLIs (``simclient exec --format claude ...``),
writes provider-native usage records where the real CLIs write them, solves tasks
by overlaying the reference solution with an arm-dependent probability, keeps a
simulated subscription quota and writes MCP transport ledger rows, so every
downstream reader can be tested against a known ground truth.
"""

from __future__ import annotations

__version__ = "1.0.0"


def main(argv: list[str] | None = None) -> int:
    """Console entry point (``simclient``); returns the process exit code."""
    from pairlab_simclient.cli import run_cli

    return run_cli(argv)


__all__ = ["__version__", "main"]
