"""Issue 7: local cl100k token counting throughput, tokenizer load time, ledger ingest rate.

Two corpora, each ~4 MB cut into 64 KiB documents (an MCP tool result is
typically a few KiB to a few hundred KiB): **code** = the repository's own
Python sources plus a JSON rendering of them and a block of CJK/emoji text
(punctuation-dense, ~3.5 bytes/token), **prose** = seeded English-like text.
Figures:

* single-thread counting (``TokenCounter.count`` document by document), MB/s of
  process CPU time -- robust when other work shares the 2 cores -- and wall MB/s
* batch counting (``count_batch`` = ``encode_ordinary_batch``, 2 threads), wall MB/s,
  and its speed-up over single-thread wall time
* cold load of the encoding in a fresh interpreter (offline bundle or verified cache), s
* ledger ingest of 20,000 JSONL rows through the validated writer, rows/s (wall)

MB = 10^6 bytes of UTF-8. Targets: single (CPU) >= 5 MB/s on code and >= 12 MB/s
on prose (PLATFORM-NOTES measured 13-18 MB/s one thread), batch speed-up >= 1.4x
on 2 cores, load < 2 s, ingest >= 2,000 rows/s. The host's load average is
printed with the figures: wall-time figures are only meaningful on an idle host.

Run alone: ``uv run python -m bench.bench_tokens``.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.result import Result
from pairlab.adapters.mcp_ledger.db import ingest_jsonl
from pairlab.core.accounting.tokenizer import load_token_counter

ROOT = Path(__file__).resolve().parent.parent
CORPUS_BYTES = 4_000_000
DOC_BYTES = 64 * 1024
INGEST_ROWS = 20_000
TARGET_CODE, TARGET_PROSE, TARGET_SPEEDUP = 5.0, 12.0, 1.4
TARGET_LOAD_S, TARGET_INGEST = 2.0, 2_000.0


def _cut(text: str) -> list[str]:
    text = text * (CORPUS_BYTES // len(text.encode()) + 1)
    docs: list[str] = []
    for start in range(0, len(text), DOC_BYTES):
        docs.append(text[start : start + DOC_BYTES])
        if sum(len(d) for d in docs) >= CORPUS_BYTES:
            break
    return docs


def build_code_documents() -> list[str]:
    sources = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "pairlab").rglob("*.py"))]
    seed = "\n".join(sources)
    seed += json.dumps({"files": sources[:20]}, indent=2)
    seed += "トークン数を数える。日本語の文章と絵文字 🙂🚀 も含める。\n" * 200
    return _cut(seed)


def build_prose_documents() -> list[str]:
    rng = random.Random(7)
    words = [
        "the",
        "of",
        "and",
        "to",
        "in",
        "is",
        "that",
        "for",
        "it",
        "as",
        "with",
        "was",
        "on",
        "be",
        "by",
        "this",
        "are",
        "from",
        "at",
        "or",
        "an",
        "agent",
        "token",
        "cache",
        "context",
        "request",
        "model",
        "provider",
        "result",
        "tool",
        "measurement",
        "ledger",
        "evidence",
        "savings",
        "reduction",
        "expansion",
        "preview",
        "session",
        "quota",
        "window",
        "price",
        "catalog",
    ]
    sentences = []
    for _ in range(20_000):
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(6, 18)))
        sentences.append(sentence.capitalize() + rng.choice([".", ".", ",", "?"]))
    return _cut(" ".join(sentences))


def _mb_per_s(n_bytes: int, seconds: float) -> float:
    return n_bytes / 1e6 / seconds


@dataclass(frozen=True)
class CountingFigures:
    single_cpu: float
    single_wall: float
    batch_wall: float

    @property
    def speedup(self) -> float:
        return self.batch_wall / self.single_wall


def measure_counting(docs: list[str]) -> CountingFigures:
    counter = load_token_counter()
    n_bytes = sum(len(d.encode()) for d in docs)
    counter.count_batch(docs[:4])  # warm the thread pool and caches
    cpu, wall = time.process_time(), time.perf_counter()
    single = [counter.count(d) for d in docs]
    single_cpu, single_wall = time.process_time() - cpu, time.perf_counter() - wall
    wall = time.perf_counter()
    batch = counter.count_batch(docs, num_threads=2)
    batch_wall = time.perf_counter() - wall
    assert single == batch, "batch and single counts must agree"
    return CountingFigures(
        _mb_per_s(n_bytes, single_cpu),
        _mb_per_s(n_bytes, single_wall),
        _mb_per_s(n_bytes, batch_wall),
    )


def measure_load() -> tuple[float, str]:
    code = (
        "import time; t = time.perf_counter();"
        "from pairlab.core.accounting.tokenizer import load_token_counter as l; c = l(); c.count('x');"
        "print(time.perf_counter() - t, c.encoding_name)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT
    )
    seconds, name = out.stdout.split()
    return float(seconds), name


def _row(i: int) -> dict[str, object]:
    before, returned = (
        hashlib.sha256(b"b%d" % i).hexdigest(),
        hashlib.sha256(b"r%d" % i).hexdigest(),
    )
    return {
        "schema_version": 2,
        "kind": "reduction",
        "process_id": "bench",
        "session_id": f"s{i // 1000}",
        "rpc_id": str(i),
        "tool": ("read_file", "search_code", "list_dir")[i % 3],
        "recorded_at": "2026-11-29T10:00:00Z",
        "before_bytes": 4000,
        "returned_bytes": 800,
        "delta_bytes": 3200,
        "before_sha256": before,
        "returned_sha256": returned,
        "before_tokens": 1000,
        "returned_tokens": 200,
        "saved_tokens": 800,
        "tokenizer": "cl100k_base",
        "expansion_ref": "sha256:" + before,
        "provenance": "measured" if i % 10 else "historical",
    }


def measure_ingest() -> float:
    with tempfile.TemporaryDirectory() as tmp:
        jsonl = Path(tmp) / "mcp-ledger.jsonl"
        jsonl.write_text("".join(json.dumps(_row(i)) + "\n" for i in range(INGEST_ROWS)))
        started = time.perf_counter()
        summary = ingest_jsonl(jsonl, Path(tmp) / "ledger.db")
        seconds = time.perf_counter() - started
    assert summary.stored == INGEST_ROWS
    return INGEST_ROWS / seconds


def run() -> list[Result]:
    code = measure_counting(build_code_documents())
    prose = measure_counting(build_prose_documents())
    load_s, encoding = measure_load()
    rows_per_s = measure_ingest()
    results = []
    for label, figures, target in (("code", code, TARGET_CODE), ("prose", prose, TARGET_PROSE)):
        results += [
            Result(
                f"count {label}, 1 thread, CPU time ({encoding})",
                figures.single_cpu,
                "MB/s",
                f">= {target:g} MB/s",
                figures.single_cpu >= target,
            ),
            Result(f"count {label}, 1 thread, wall", figures.single_wall, "MB/s", "(info)", True),
            Result(
                f"count {label}, batch 2 threads, wall", figures.batch_wall, "MB/s", "(info)", True
            ),
            Result(
                f"count {label}, batch speed-up",
                figures.speedup,
                "x",
                f">= {TARGET_SPEEDUP:g}x",
                figures.speedup >= TARGET_SPEEDUP,
            ),
        ]
    results += [
        Result(
            "cl100k encoding cold load",
            load_s,
            "s",
            f"< {TARGET_LOAD_S:g} s",
            load_s < TARGET_LOAD_S,
        ),
        Result(
            "ledger ingest (validated writer)",
            rows_per_s,
            "rows/s",
            f">= {TARGET_INGEST:,.0f} rows/s",
            rows_per_s >= TARGET_INGEST,
        ),
    ]
    return results


if __name__ == "__main__":
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for result in run():
        verdict = "PASS" if result.passed else "MISS"
        print(
            f"{result.name}: {result.figure:,.2f} {result.unit} (target {result.target}) {verdict}"
        )
