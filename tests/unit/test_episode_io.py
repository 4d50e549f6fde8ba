"""What the flows read out of a collected episode: only regular files the collection listed."""

from __future__ import annotations

from pathlib import Path

from pairlab.adapters.backends.collection import list_collected
from pairlab.adapters.episode.io import ingest_ledger, usage_files
from pairlab.adapters.profiles import load_named_profile
from tests.support import PROFILES_DIR


def test_a_symlink_the_agent_planted_is_never_read(tmp_path: Path) -> None:
    outside = tmp_path / "host-secret.jsonl"
    outside.write_text('{"not": "the agent\'s"}\n')
    dest = tmp_path / "collected"
    projects = dest / "home" / ".claude" / "projects"
    projects.mkdir(parents=True)
    (projects / "real.jsonl").write_text("{}\n")
    (projects / "planted.jsonl").symlink_to(outside)
    (dest / "state").mkdir()
    (dest / "state" / "mcp-ledger.jsonl").symlink_to(outside)
    (dest / "state" / "notes.txt").write_text("not usage")

    collected = list_collected(dest)
    profile = load_named_profile("sim", PROFILES_DIR)
    assert usage_files(profile, collected) == [projects / "real.jsonl"]
    # the only ledger file is a link out of the episode: no ledger, not an empty one
    assert ingest_ledger(collected, tmp_path / "episode") is None
    assert not (tmp_path / "episode" / "ledger.db").exists()


def test_published_location_reads_store_urls_as_the_store_does(tmp_path: Path) -> None:
    from pairlab.adapters.run.outputs import published_location
    from pairlab.adapters.store import open_store

    spaced = tmp_path / "my store"
    url = f"file://localhost{spaced.as_posix().replace(' ', '%20')}"
    assert open_store(url).root == spaced  # type: ignore[attr-defined]
    assert published_location(url, "R", "report.md") == str(spaced / "runs" / "R" / "report.md")
    assert published_location("s3://b/p/", "R", "x") == "s3://b/p/runs/R/x"
