"""The ``pairlab`` command line (typer).

Each command group lives in its own module with a ``register(app)`` function.
This package is the one place that maps :class:`PairlabError` to exit codes and
``--json`` reason codes (DESIGN 13: 0 ok/supported, 1 rejected/failed,
2 inconclusive/invalid input, 3 environment unavailable).
"""

from __future__ import annotations

import importlib
import json
import os
import sys

import typer

from pairlab.core.errors import PairlabError, ReasonCode

COMMAND_MODULES = (
    "plan",
    "aggregate",
    "power",
    "episode",
    "certify",
    "usage",
    "run",
    "compare",
    "audit",
    "price",
    "store",
    "report",
    "emulator",
    "images",
    "stack",
    "account",
)

app = typer.Typer(
    name="pairlab",
    help="Paired, causal evaluation of token-optimization interventions for coding-agent CLIs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _name in COMMAND_MODULES:
    importlib.import_module(f"pairlab.cli.{_name}").register(app)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    try:
        app(args=args, prog_name="pairlab", standalone_mode=True)
    except PairlabError as exc:
        if exc.reason == ReasonCode.OUTPUT_WRITE_FAILED:
            # stdout is what failed: the error goes to stderr, what is left unwritten nowhere
            print(f"pairlab: error [{exc.reason}]: {exc.message}", file=sys.stderr)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(exc.exit_code)
        if "--json" in args:
            print(json.dumps(exc.to_json()))
        else:
            print(f"pairlab: error [{exc.reason}]: {exc.message}", file=sys.stderr)
        sys.exit(exc.exit_code)
