"""Shared CLI output helpers: JSON to stdout, human text via rich."""

from __future__ import annotations

import json
from typing import Any

import typer


def emit_json(payload: Any) -> None:
    typer.echo(json.dumps(payload, indent=2, sort_keys=False, default=str))
