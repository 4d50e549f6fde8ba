"""Raw client records (episodes/*/collected/: transcripts with prompts and model
output) leave the machine only when the run asked for transcripts."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from pairlab.adapters.store import open_store
from pairlab.adapters.store.publish import publish_run
from pairlab.cli import app
from pairlab.core.run_manifest import is_transcript_key
from tests.integration.store.run_dirs import write_eval_run

TRANSCRIPT = "episodes/{eid}/collected/home/.claude/projects/p/session.jsonl"


def _with_transcript(tmp_path: Path, include: bool | None) -> tuple[Path, str]:
    run_dir = write_eval_run(tmp_path / "work", "run-t")
    eid = next(p.name for p in (run_dir / "episodes").iterdir() if p.is_dir())
    key = TRANSCRIPT.format(eid=eid)
    path = run_dir / key
    path.parent.mkdir(parents=True)
    path.write_text('{"type":"user","message":{"content":"the whole prompt"}}\n', encoding="utf-8")
    if include is not None:
        report = json.loads((run_dir / "report.json").read_text())
        report["meta"] = {"include_transcript": include}
        (run_dir / "report.json").write_text(json.dumps(report), encoding="utf-8")
    return run_dir, key


def test_transcript_keys_are_recognised() -> None:
    assert is_transcript_key("episodes/r:t:0:full/collected/home/x.jsonl")
    assert not is_transcript_key("episodes/r:t:0:full/record.json")
    assert not is_transcript_key("episodes/r:t:0:full/ledger.db")
    assert not is_transcript_key("collected/x.jsonl")


def test_withheld_unless_the_run_asked(tmp_path: Path) -> None:
    run_dir, key = _with_transcript(tmp_path, include=None)
    store = open_store(str(tmp_path / "store"))
    manifest = publish_run(run_dir, store)
    keys = {o.key for o in manifest.objects}
    assert key not in keys and "episodes.jsonl" in keys
    assert manifest.extra["withheld_transcript_objects"] == 1
    assert not (tmp_path / "store" / "runs" / "run-t" / key).exists()


def test_published_when_the_run_asked(tmp_path: Path) -> None:
    run_dir, key = _with_transcript(tmp_path, include=True)
    manifest = publish_run(run_dir, open_store(str(tmp_path / "store")))
    assert key in {o.key for o in manifest.objects}
    assert (tmp_path / "store" / "runs" / "run-t" / key).is_file()


def test_cli_flag_overrides_the_run(tmp_path: Path) -> None:
    run_dir, key = _with_transcript(tmp_path, include=True)
    store_dir = tmp_path / "store"
    result = CliRunner().invoke(
        app, ["publish", str(run_dir), "--to", str(store_dir), "--withhold-transcripts", "--json"]
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((store_dir / "runs" / "run-t" / "manifest.json").read_text())
    assert key not in {o["key"] for o in manifest["objects"]}
