"""Issue 4: usage-parsing throughput and peak memory on a large generated corpus.

Generates (in a temp dir, deleted afterwards) >= 500 MB of provider-native records:
~300 MB of Claude Code transcripts (responses streamed as 2-3 lines sharing a
``message.id``, user/tool-result lines, subagent files) and ~250 MB of Codex
rollouts (response items, re-emitted ``token_count`` snapshots with rate limits,
turn contexts). Each reader then reads its whole corpus as ONE episode in a fresh
interpreter (the worst case for the cross-file dedupe map), which prints its
wall time and its own peak RSS (``VmHWM``). Figures: MB/s (10^6 bytes of
file per wall second) and peak RSS in MiB, beside the RSS of an interpreter that
only imported the reader (the memory the corpus itself cost).

Targets: >= 15 MB/s per reader on 2 shared cores; peak RSS < 400 MiB for a
500 MB corpus (memory grows with distinct API calls, never with file size).

Run alone: ``uv run python bench/bench_parse.py``.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.result import Result  # noqa: E402

CLAUDE_MB = 300
CODEX_MB = 250
MIN_MBPS = 15.0
MAX_RSS_MIB = 400.0

_WORDS = [
    "the",
    "invoice",
    "total",
    "rounding",
    "test",
    "fails",
    "because",
    "quantize",
    "uses",
    "ROUND_HALF_UP",
    "while",
    "the",
    "spec",
    "expects",
    "banker's",
    "rounding",
    "so",
    "we",
    "change",
    "the",
    "call",
    "and",
    "rerun",
    "pytest",
]


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n_words))


def _claude_session(path: Path, rng: random.Random, session: str, target: int, side: bool) -> int:
    written = 0
    with path.open("w") as f:
        n = 0
        while written < target:
            n += 1
            mid = f"msg_01{session[:8]}{n:07d}"
            rid = f"req_011C{session[:6]}{n:07d}"
            inp, cr, cw5, cw1 = rng.randint(1, 9), rng.randint(0, 90000), rng.randint(0, 4000), 0
            final = rng.randint(20, 900)
            blocks = rng.choice((2, 3))
            user = {
                "parentUuid": None,
                "isSidechain": side,
                "userType": "external",
                "cwd": "/home/dev/p",
                "sessionId": session,
                "version": "2.0.14",
                "type": "user",
                "uuid": f"u-{n}",
                "timestamp": "2025-10-02T09:14:01.120Z",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "tool_use_id": f"toolu_{n}",
                            "type": "tool_result",
                            "content": _text(rng, 120),
                        }
                    ],
                },
            }
            line = json.dumps(user) + "\n"
            f.write(line)
            written += len(line)
            for b in range(blocks):
                out = final if b == blocks - 1 else 1
                rec = {
                    "parentUuid": f"u-{n}",
                    "isSidechain": side,
                    "userType": "external",
                    "cwd": "/home/dev/p",
                    "sessionId": session,
                    "version": "2.0.14",
                    "gitBranch": "main",
                    "message": {
                        "model": "claude-sonnet-4-5-20250929",
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "text", "text": _text(rng, 60)}],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {
                            "input_tokens": inp,
                            "cache_creation_input_tokens": cw5 + cw1,
                            "cache_read_input_tokens": cr,
                            "cache_creation": {
                                "ephemeral_5m_input_tokens": cw5,
                                "ephemeral_1h_input_tokens": cw1,
                            },
                            "output_tokens": out,
                            "service_tier": "standard",
                        },
                    },
                    "requestId": rid,
                    "type": "assistant",
                    "uuid": f"a-{n}-{b}",
                    "timestamp": "2025-10-02T09:14:04.901Z",
                }
                line = json.dumps(rec) + "\n"
                f.write(line)
                written += len(line)
    return written


def _codex_rollout(path: Path, rng: random.Random, session: str, target: int) -> int:
    written = 0
    tot = {
        "input_tokens": 0,
        "cached_input_tokens": 0,
        "output_tokens": 0,
        "reasoning_output_tokens": 0,
        "total_tokens": 0,
    }
    with path.open("w") as f:
        meta = {
            "timestamp": "2025-10-14T09:00:00.120Z",
            "type": "session_meta",
            "payload": {
                "id": session,
                "cwd": "/home/dev/p",
                "originator": "codex_cli_rs",
                "cli_version": "0.46.0",
                "source": "cli",
                "model_provider": "openai",
            },
        }
        f.write(json.dumps(meta) + "\n")
        n = 0
        while written < target:
            n += 1
            lines = [
                {
                    "timestamp": "2025-10-14T09:00:01.000Z",
                    "type": "turn_context",
                    "payload": {
                        "cwd": "/home/dev/p",
                        "approval_policy": "never",
                        "model": "gpt-5-codex",
                        "effort": "medium",
                        "summary": "auto",
                    },
                },
                {
                    "timestamp": "2025-10-14T09:00:02.000Z",
                    "type": "response_item",
                    "payload": {
                        "type": "function_call_output",
                        "call_id": f"call_{n}",
                        "output": _text(rng, 150),
                    },
                },
                {
                    "timestamp": "2025-10-14T09:00:03.000Z",
                    "type": "response_item",
                    "payload": {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": _text(rng, 50)}],
                    },
                },
            ]
            add_in, add_c = rng.randint(2000, 20000), 0
            add_c = rng.randint(0, add_in)
            tot["input_tokens"] += add_in
            tot["cached_input_tokens"] += add_c
            tot["output_tokens"] += rng.randint(10, 900)
            tot["reasoning_output_tokens"] += rng.randint(0, 300)
            tot["total_tokens"] = tot["input_tokens"] + tot["output_tokens"]
            tc = {
                "timestamp": "2025-10-14T09:00:04.000Z",
                "type": "event_msg",
                "payload": {
                    "type": "token_count",
                    "info": {
                        "total_token_usage": dict(tot),
                        "last_token_usage": dict(tot),
                        "model_context_window": 272000,
                    },
                    "rate_limits": {
                        "primary": {
                            "used_percent": 12.0,
                            "window_minutes": 300,
                            "resets_at": 1760446800,
                        },
                        "secondary": {
                            "used_percent": 31.0,
                            "window_minutes": 10080,
                            "resets_at": 1760889600,
                        },
                    },
                },
            }
            lines += [tc, tc]  # re-emitted snapshot
            for rec in lines:
                line = json.dumps(rec) + "\n"
                f.write(line)
                written += len(line)
    return written


def generate(root: Path) -> dict[str, tuple[Path, int]]:
    rng = random.Random(20251014)
    claude, codex = root / "claude", root / "codex"
    total_claude = total_codex = 0
    per_file = 25 * 10**6
    i = 0
    while total_claude < CLAUDE_MB * 10**6:
        i += 1
        sid = f"{i:08d}-3d4e-4b8e-9a61-2f5d8c0e4b13"
        side = i % 5 == 0
        sub = "subagents/" if side else ""
        p = claude / f"{sid}" / f"{sub}{'agent-' if side else ''}{sid}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        total_claude += _claude_session(p, rng, sid, per_file, side)
    i = 0
    while total_codex < CODEX_MB * 10**6:
        i += 1
        sid = f"0199e3a1-5c2b-7d40-9a8e-{i:012d}"
        p = codex / "sessions/2025/10/14" / f"rollout-2025-10-14T09-00-00-{sid}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        total_codex += _codex_rollout(p, rng, sid, per_file)
    return {"claude": (claude, total_claude), "codex": (codex, total_codex)}


# Peak RSS is VmHWM (this process image's high-water mark), not ru_maxrss: Linux
# carries ru_maxrss across exec, so a child forked from a large benchmark process
# would report its parent's size (run_all.py after the aggregation bench: ~200 MiB).
_CHILD = """
import sys, time, json
from pathlib import Path
def hwm_kib():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
from pairlab.adapters.usage import read_usage
base = hwm_kib()
if sys.argv[3] == "read":
    t = time.perf_counter()
    r = read_usage(sys.argv[1], [Path(sys.argv[2])])
    took = time.perf_counter() - t
    calls = r.api_calls
else:
    took, calls = 0.0, None
peak = hwm_kib()
print(json.dumps({"s": took, "peak_kib": peak, "base_kib": base, "calls": calls}))
"""


def _measure(client: str, path: Path, mode: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, client, str(path), mode],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    data: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def run() -> list[Result]:
    results: list[Result] = []
    tmp = Path(tempfile.mkdtemp(prefix="pairlab-bench-parse-"))
    try:
        corpora = generate(tmp)
        for client, (path, size) in corpora.items():
            m = _measure(client, path, "read")
            idle = _measure(client, path, "idle")
            mbps = size / 10**6 / m["s"]
            peak_mib = m["peak_kib"] / 1024
            print(
                f"  {client}: {size / 10**6:,.0f} MB, {m['calls']:,} calls, {m['s']:.1f} s, "
                f"{mbps:.1f} MB/s, peak RSS {peak_mib:.0f} MiB "
                f"(imports alone {idle['peak_kib'] / 1024:.0f} MiB)",
                file=sys.stderr,
            )
            results.append(
                Result(
                    f"usage parse {client} {size / 10**6:,.0f} MB (one episode)",
                    mbps,
                    "MB/s",
                    f">= {MIN_MBPS:g} MB/s",
                    mbps >= MIN_MBPS,
                )
            )
            results.append(
                Result(
                    f"usage parse {client}: peak RSS",
                    peak_mib,
                    "MiB",
                    f"< {MAX_RSS_MIB:g} MiB",
                    peak_mib < MAX_RSS_MIB,
                )
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results


if __name__ == "__main__":
    for r in run():
        print(
            f"{r.name}: {r.figure:,.1f} {r.unit} (target {r.target}) "
            f"{'PASS' if r.passed else 'MISS'}"
        )
