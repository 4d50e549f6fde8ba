"""Byte-identity check of the cohort analysis against another checkout (issue 15 item 4).

Runs ``analyse_cohorts`` + ``to_json`` on bench-shaped frames (>= 1,000 cohorts, so this
checkout takes its compiled path) with the code of the checkout at ``ROOT`` and prints
the SHA-256 of each canonical JSON, and which engine ran. Run it once per checkout and
compare the lines, e.g. against main::

    git archive main | tar -x -C /tmp/main-tree
    uv run python bench/identical_to.py /tmp/main-tree
    uv run python bench/identical_to.py .

(each in its own process: the checkout's ``pairlab`` is imported from ``ROOT``).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

SHAPES = ((1200, 10, 5), (1050, 25, 5), (1100, 3, 2))  # cohorts, pairs, min_pairs


def main() -> None:
    root = str(Path(sys.argv[1]).resolve())
    sys.path.insert(0, root)
    import pairlab.core.analysis.cohorts as cohorts

    if not cohorts.__file__ or not cohorts.__file__.startswith(root):
        raise SystemExit(f"pairlab imported from {cohorts.__file__}, not {root}")
    sys.path.insert(1, str(Path(__file__).resolve().parent.parent))
    from bench.bench_aggregate import generate_frame

    for n, pairs, min_pairs in SHAPES:
        frame = generate_frame(n, pairs, seed=n + pairs)
        started = time.process_time()
        analysis = cohorts.analyse_cohorts(
            frame, run_id="cmp", min_pairs=min_pairs, n_resamples=10_000
        )
        text = json.dumps(analysis.to_json(), sort_keys=True).encode()
        engine = getattr(analysis, "engine", "") or "(no engine field)"
        cpu = time.process_time() - started
        print(
            f"{n} cohorts x {pairs} pairs: {hashlib.sha256(text).hexdigest()} {engine} {cpu:.1f} s CPU"
        )


if __name__ == "__main__":
    main()
