"""``REAL_CLIS``: one record per real CLI, and the call sites that look it up instead
of branching on the client's name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pairlab.adapters.certify.planted_config import plant
from pairlab.adapters.clients.registry import REAL_CLIS, resolve_cli
from pairlab.adapters.episode.finding_evidence import lifecycle_of
from pairlab.adapters.episode.io import extract_final_answer
from pairlab.adapters.run.provider import cli_own_usage
from pairlab.adapters.usage import READERS

STDOUT = {
    "claude": json.dumps(
        {
            "type": "result",
            "result": "Fixed.",
            "usage": {"input_tokens": 2, "cache_read_input_tokens": 0, "output_tokens": 3},
        }
    ),
    "codex": "\n".join(
        json.dumps(o)
        for o in (
            {"type": "item.completed", "item": {"type": "agent_message", "text": "Fixed."}},
            {"type": "turn.completed", "usage": {"input_tokens": 2, "output_tokens": 3}},
        )
    ),
}


def test_each_record_is_keyed_by_its_name_and_names_a_known_usage_reader() -> None:
    assert sorted(REAL_CLIS) == ["claude", "codex"]
    for key, cli in REAL_CLIS.items():
        assert cli.name == key and cli.usage_reader in READERS
        assert cli.headless_flags and not Path(cli.transcript_dir).is_absolute()


@pytest.mark.parametrize("client", sorted(REAL_CLIS))
def test_the_episode_and_provider_call_sites_read_stdout_through_the_record(client: str) -> None:
    stdout = STDOUT[client]
    assert extract_final_answer(stdout, client) == "Fixed."
    usage = cli_own_usage(client, stdout)
    assert usage is not None and usage.output == 3 and usage.cache_read in (0, None)
    assert usage == REAL_CLIS[client].own_usage(stdout)
    # the other CLI's stdout is not this CLI's: no answer, no usage (null, not zero)
    other = next(c for c in REAL_CLIS if c != client)
    assert extract_final_answer(STDOUT[other], client) is None
    assert cli_own_usage(client, STDOUT[other]) is None


def test_clients_without_a_record_keep_the_simulators_rules() -> None:
    assert extract_final_answer("work\nFINAL ANSWER: 42\n", "gemini") == "42"
    assert cli_own_usage("gemini", STDOUT["claude"]) is None


def test_planting_for_an_unknown_client_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValueError, match="no planted config for client 'gemini'"):
        plant("gemini", tmp_path / "home", tmp_path / "ws")
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("client", sorted(REAL_CLIS))
def test_lifecycle_joins_call_ids_from_transcripts_in_the_records_folder_only(
    client: str, tmp_path: Path
) -> None:
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
    call["params"] = {"name": "read_file", "_meta": {"callId": "call-7"}}
    trace = tmp_path / "state" / "trace.jsonl"
    trace.parent.mkdir(parents=True)
    trace.write_text(json.dumps({"dir": "in", "line": json.dumps(call)}) + "\n")
    line = json.dumps({"type": "function_call", "call_id": "call-7"}) + "\n"
    other = next(c for c in REAL_CLIS if c != client)
    elsewhere = tmp_path / "home" / REAL_CLIS[other].transcript_dir / "s.jsonl"
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text(line)  # the other CLI's folder holds no transcript of this CLI
    event = lifecycle_of(client, tmp_path, "trace.jsonl")["events"]["client-call-id"]
    assert event["status"] == "missing", event
    path = tmp_path / "home" / REAL_CLIS[client].transcript_dir / "2026" / "s.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(line)
    event = lifecycle_of(client, tmp_path, "trace.jsonl")["events"]["client-call-id"]
    assert event["status"] == "observed", event


def test_resolving_a_cli_finds_its_binary_where_its_record_locates_it() -> None:
    for name in ("claude", "codex"):
        found = resolve_cli(name)  # type: ignore[arg-type]
        cli = REAL_CLIS[name]
        package = next(p for p in found.binary.parents if p.name == cli.import_name)
        binary, dirs = cli.locate(package)
        assert (found.wheel, found.binary) == (cli.wheel, binary)
        assert found.path_dirs == tuple(d for d in dirs if d.is_dir()) and found.path_dirs
        assert found.version == cli.read_version(binary)
