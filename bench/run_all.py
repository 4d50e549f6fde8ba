"""Run every benchmark under bench/ and print each figure beside its target.

Discovers ``bench/bench_*.py`` (sorted), calls each module's ``run()`` (which
returns objects with ``name, figure, unit, target, passed``; see
``bench/result.py``) and prints one table with PASS/MISS. Exit status 1 when a
benchmark crashed (a MISS is a measured figure, not a crash). Usage:
``make bench`` or ``uv run python bench/run_all.py [NAME_SUBSTRING ...]``.
"""

from __future__ import annotations

import importlib
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def discover(filters: list[str]) -> list[str]:
    names = sorted(p.stem for p in (ROOT / "bench").glob("bench_*.py"))
    return [n for n in names if not filters or any(f in n for f in filters)]


def main(argv: list[str]) -> int:
    rows: list[tuple[str, str, str, str, str]] = []
    crashed = 0
    for name in discover(argv):
        started = time.perf_counter()
        print(f"running bench/{name}.py ...", file=sys.stderr, flush=True)
        try:
            results = importlib.import_module(f"bench.{name}").run()
        except Exception:
            traceback.print_exc()
            rows.append((name, "CRASHED", "", "", "MISS"))
            crashed += 1
            continue
        took = time.perf_counter() - started
        print(f"  done in {took:.1f} s", file=sys.stderr, flush=True)
        for r in results:
            rows.append(
                (
                    r.name,
                    f"{r.figure:,.3g} {r.unit}",
                    r.target,
                    name,
                    "PASS" if r.passed else "MISS",
                )
            )
    header = ("benchmark", "figure", "target", "module", "result")
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)))
    return 1 if crashed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
