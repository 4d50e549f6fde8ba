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
    # the links are gone from the copy (a published run holds regular files only), the
    # files they pointed at untouched
    assert not [p for p in dest.rglob("*") if p.is_symlink()]
    assert outside.read_text() == '{"not": "the agent\'s"}\n'
    assert (projects / "real.jsonl").is_file()


def test_a_cli_helper_link_left_in_home_is_not_collected(tmp_path: Path) -> None:
    """Codex's ``apply_patch`` link under ``~/.codex/tmp/arg0-*/`` (left when Codex ends a
    turn on a usage limit) is dropped from the copy: the store refuses links."""
    dest = tmp_path / "collected"
    helper = dest / "home" / ".codex" / "tmp" / "arg0-linux" / "codex-arg0x"
    helper.mkdir(parents=True)
    (helper / "apply_patch").symlink_to("/usr/bin/true")
    (dest / "home" / ".codex" / "config.toml").write_text("model = 'x'\n")
    collected = list_collected(dest)
    assert [f.path for f in collected.files] == ["home/.codex/config.toml"]
    assert not (helper / "apply_patch").exists() and not (helper / "apply_patch").is_symlink()


def test_published_location_reads_store_urls_as_the_store_does(tmp_path: Path) -> None:
    from pairlab.adapters.run.outputs import published_location
    from pairlab.adapters.store import open_store

    spaced = tmp_path / "my store"
    url = f"file://localhost{spaced.as_posix().replace(' ', '%20')}"
    assert open_store(url).root == spaced  # type: ignore[attr-defined]
    assert published_location(url, "R", "report.md") == str(spaced / "runs" / "R" / "report.md")
    assert published_location("s3://b/p/", "R", "x") == "s3://b/p/runs/R/x"
