"""Find the ledgers behind a path (one ledger.db, an episode dir or a run dir) and audit them read-only.

Run directory layout: ``runs/<run_id>/episodes/<episode_id>/ledger.db`` with
``runs/<run_id>/episodes.jsonl`` giving each episode's arm. An episode missing
from episodes.jsonl takes its arm from its id (``...:<arm>``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pairlab.adapters.mcp_ledger.db import read_ledger
from pairlab.core.accounting.audit import LedgerSource, audit_ledgers
from pairlab.core.accounting.tokenizer import local_encoding_name
from pairlab.core.errors import InvalidInputError, ReasonCode

LEDGER_FILE = "ledger.db"


def read_episode_arms(run_dir: Path) -> dict[str, str]:
    """episode id -> arm from ``episodes.jsonl`` (camelCase or snake_case keys); {} when absent."""
    path = run_dir / "episodes.jsonl"
    arms: dict[str, str] = {}
    if not path.is_file():
        return arms
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # the aggregator reports malformed records; the audit only needs arms
        if not isinstance(record, dict):
            continue
        episode = record.get("episodeId", record.get("episode_id"))
        arm = record.get("arm")
        if isinstance(episode, str) and isinstance(arm, str):
            arms[episode] = arm
    return arms


def _arm_of(episode_id: str, arms: dict[str, str]) -> str | None:
    if episode_id in arms:
        return arms[episode_id]
    return episode_id.rsplit(":", 1)[1] if ":" in episode_id else None


def _source(name: str, db: Path, arm: str | None) -> LedgerSource:
    contents = read_ledger(db)
    return LedgerSource(
        name, contents.rows, arm, contents.duplicate_attempts, contents.malformed_lines
    )


def audit_path(path: Path) -> dict[str, Any]:
    """The audit report for a ledger file, an episode directory or a run directory."""
    encoding = local_encoding_name()
    if path.is_file():
        report = audit_ledgers([_source(str(path), path, None)], tokenizer_encodings=[encoding])
        report["source"] = {"kind": "ledger", "path": str(path)}
        return report
    if (path / LEDGER_FILE).is_file():
        report = audit_ledgers(
            [_source(path.name, path / LEDGER_FILE, _arm_of(path.name, {}))],
            tokenizer_encodings=[encoding],
        )
        report["source"] = {"kind": "episode", "path": str(path)}
        return report
    episodes_dir = path / "episodes"
    if not episodes_dir.is_dir():
        raise InvalidInputError(
            f"{path}: neither a ledger database nor a run directory (no episodes/)",
            reason=ReasonCode.NOT_FOUND,
        )
    arms = read_episode_arms(path)
    sources = [
        _source(db.parent.name, db, _arm_of(db.parent.name, arms))
        for db in sorted(episodes_dir.glob(f"*/{LEDGER_FILE}"))
    ]
    report = audit_ledgers(sources, tokenizer_encodings=[encoding], per_arm=True)
    report["source"] = {"kind": "run", "path": str(path)}
    return report
