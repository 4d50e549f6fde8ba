"""Redaction throughput and local publish/pull of a run with many objects.

* ``redact_text`` over ~32 MiB of transcript-like JSON lines with a secret every
  ~200 lines: MiB/s, target >= 10 MiB/s (a run's text is redacted once per publish),
  and the same with every rule's pre-check triggered on every line (>= 5 MiB/s);
* publish + verified pull of a 500-object run to the local store: wall time,
  target < 10 s.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from bench.result import Result
from pairlab.adapters.store import open_store
from pairlab.adapters.store.publish import publish_run
from pairlab.adapters.store.runs import pull_run
from pairlab.core.redaction import redact_text


def transcript_text(target_bytes: int) -> str:
    lines: list[str] = []
    size = 0
    i = 0
    while size < target_bytes:
        content = f"step {i}: edited src/module_{i % 50}.py, ran the tests, 3 passed in 0.{i % 9}s"
        if i % 200 == 0:
            content += f" key sk-ant-api03-{'A' * 30}{i} in /home/dev{i}/proj"
        line = json.dumps({"type": "assistant", "message": {"content": content}})
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(lines)


def bench_redaction() -> list[Result]:
    text = transcript_text(32 * 1024 * 1024)
    # Worst case: every line holds text that triggers every rule's pre-check.
    busy = text.replace(
        "edited", "Authorization: Basic x; bearer ok; api_key; aws_secret_; a@b.io; edited"
    )
    results = []
    for name, sample, target in (("", text, 10.0), (", every rule triggered", busy, 5.0)):
        started = time.perf_counter()
        result = redact_text(sample)
        took = time.perf_counter() - started
        assert result.findings["anthropic-api-key"] > 0
        rate = len(sample.encode()) / (1024 * 1024) / took
        results.append(
            Result(
                f"redact_text throughput (32 MiB JSONL{name})",
                rate,
                "MiB/s",
                f">= {target:g} MiB/s",
                rate >= target,
            )
        )
    return results


def bench_publish_pull() -> Result:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "runs" / "bench-run"
        for n in range(500):
            episode = run_dir / "episodes" / f"bench-run:task-{n}:0:baseline"
            episode.mkdir(parents=True)
            (episode / "stdout.txt").write_text(transcript_text(8 * 1024), encoding="utf-8")
        started = time.perf_counter()
        store = open_store(str(Path(tmp) / "store"))
        publish_run(run_dir, store)
        pull_run(store, "bench-run", Path(tmp) / "pulled")
        took = time.perf_counter() - started
    return Result("publish + pull 500 objects (local store)", took, "s", "< 10 s", took < 10)


def run() -> list[Result]:
    return [*bench_redaction(), bench_publish_pull()]
