"""Contract between the simulator's MCP ledger rows and the validated ledger (LEDGER ROW format)."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pairlab_simclient import mcp_ledger  # installed with the project: never a skip

from pairlab.adapters.mcp_ledger.db import ingest_jsonl, ledger_totals
from pairlab.core.accounting.ledger_rules import qualify_row
from pairlab.core.accounting.tokenizer import load_token_counter


@pytest.mark.parametrize("arm", ["optimizer", "retrieval", "full"])
def test_simulated_ledger_ingests_to_the_simulator_truth(tmp_path: Path, arm: str) -> None:
    counter = load_token_counter()
    for seed in range(8):
        entries = mcp_ledger.build_ledger(
            random.Random(seed), arm, f"sess-{seed}", datetime(2026, 11, 29, tzinfo=UTC), 0.5
        )
        for entry in entries:
            verdict = qualify_row(entry.row)
            if entry.row["provenance"] == "measured":
                assert verdict.is_qualified, verdict.reasons
            # The rows' token counts are exact local cl100k counts of the payloads.
            assert entry.row["returned_tokens"] == counter.count(entry.returned.text)
            if entry.before is not None:
                assert entry.row["before_tokens"] == counter.count(entry.before.text)
        jsonl = tmp_path / f"{arm}-{seed}.jsonl"
        jsonl.write_text("".join(json.dumps(e.row) + "\n" for e in entries))
        db = tmp_path / f"{arm}-{seed}" / "ledger.db"
        summary = ingest_jsonl(jsonl, db)
        truth = mcp_ledger.summarize_ledger(entries)
        totals = ledger_totals(db)
        assert summary.duplicates == len(truth["retried_rpc_ids"])
        assert totals["gross_reduction_tokens"] == truth["gross_reduction_tokens"]
        assert totals["expansion_debit_tokens"] == truth["expansion_debit_tokens"]
        assert totals["verified_net_tokens"] == truth["net_verified_tokens"]
        assert totals["excluded_rows"] == truth["excluded_rows"]
        assert totals["orphan_expansions"] == 0
