"""Property tests: re-emission, duplication and file splits never change the vector."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pairlab.adapters.usage import read_usage


def _tc(ts: int, total: dict[str, int]) -> dict[str, object]:
    return {
        "timestamp": f"2025-10-14T09:{ts // 60:02d}:{ts % 60:02d}.000Z",
        "type": "event_msg",
        "payload": {
            "type": "token_count",
            "info": {"total_token_usage": total},
            "rate_limits": None,
        },
    }


steps = st.lists(
    st.tuples(st.integers(0, 5000), st.integers(0, 5000), st.integers(0, 900), st.integers(0, 3)),
    min_size=1,
    max_size=25,
)


@given(steps)
def test_codex_total_is_last_cumulative_whatever_the_reemissions(
    rows: list[tuple[int, int, int, int]],
) -> None:
    total = {
        "input_tokens": 0,
        "cached_input_tokens": 0,
        "output_tokens": 0,
        "reasoning_output_tokens": 0,
    }
    lines: list[dict[str, object]] = [
        {
            "timestamp": "2025-10-14T09:00:00.000Z",
            "type": "session_meta",
            "payload": {"id": "s", "cli_version": "0.46.0", "source": "cli"},
        }
    ]
    for i, (cached_add, fresh_add, out_add, repeats) in enumerate(rows):
        total = dict(total)
        total["input_tokens"] += cached_add + fresh_add
        total["cached_input_tokens"] += cached_add
        total["output_tokens"] += out_add
        lines.extend(_tc(i + 1, total) for _ in range(1 + repeats))
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "rollout-x.jsonl"
        p.write_text("".join(json.dumps(x) + "\n" for x in lines))
        r = read_usage("codex", [p])
    assert r.vector.output == total["output_tokens"]
    assert r.vector.cache_read == total["cached_input_tokens"]
    assert r.vector.uncached_input == total["input_tokens"] - total["cached_input_tokens"]
    assert r.vector.cache_write_generic is None


groups = st.lists(
    st.tuples(st.integers(1, 4), st.integers(2, 2000), st.integers(0, 2)),
    min_size=1,
    max_size=12,
)


@given(groups, st.randoms(use_true_random=False))
def test_claude_output_is_sum_of_final_lines_across_any_file_split(
    spec: list[tuple[int, int, int]], rnd: object
) -> None:
    import random

    assert isinstance(rnd, random.Random)
    lines: list[str] = []
    for g, (blocks, final, copies) in enumerate(spec):
        for b in range(blocks):
            out = final if b == blocks - 1 else 1
            line = json.dumps(
                {
                    "type": "assistant",
                    "sessionId": "s",
                    "isSidechain": False,
                    "requestId": f"req_{g}" if copies == 0 else None,
                    "message": {
                        "id": f"msg_{g}",
                        "model": "m",
                        "role": "assistant",
                        "usage": {
                            "input_tokens": 3,
                            "output_tokens": out,
                            "cache_read_input_tokens": 10,
                        },
                    },
                }
            )
            lines.extend([line] * (1 + copies))
    with tempfile.TemporaryDirectory() as tmp:
        files = [Path(tmp) / f"part-{i}.jsonl" for i in range(rnd.randint(1, 3))]
        buckets: list[list[str]] = [[] for _ in files]
        for line in lines:  # keep order within each file; spread lines over files
            buckets[rnd.randrange(len(files))].append(line)
        for f, bucket in zip(files, buckets, strict=True):
            f.write_text("".join(x + "\n" for x in bucket))
        r = read_usage("claude", [Path(tmp)])
    assert r.api_calls == len(spec)
    assert r.vector.output == sum(final for _, final, _ in spec)
    assert r.vector.cache_read == 10 * len(spec)
