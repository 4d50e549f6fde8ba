"""Issue 28: report.html at 10,000 cohorts (target <= 10 MB; it was ~80 MB).

The analysis of :func:`bench.bench_aggregate.generate_frame` (10,000 cohorts of 10 pairs,
4 arms: 60 effects per cohort; 1,000 resamples - the page's size does not depend on the
count), its headline and report JSON as a run builds them
(:func:`pairlab.core.report.markdown.build_report_json`), then ``report.html`` rendered
both ways in one run: every cohort drawn in full (the renderer before issue 28, by
raising :data:`pairlab.core.report.html.FULL_COHORTS` above the cohort count) and as
shipped (:data:`FULL_COHORTS` cohorts drawn, every cohort in one line). Figures: MB and
render time each way.

Run alone: ``uv run python -m bench.bench_report_html [--cohorts N]``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import pairlab.core.report.html as report_html
from bench.bench_aggregate import generate_frame
from bench.result import Result

TARGET_MB = 10.0


def report_payload(n_cohorts: int, pairs: int = 10, resamples: int = 1_000) -> dict[str, Any]:
    from pairlab.core.analysis.cohorts import analyse_cohorts
    from pairlab.core.report.headline import build_headline
    from pairlab.core.report.markdown import build_report_json

    analysis = analyse_cohorts(
        generate_frame(n_cohorts, pairs), run_id="bench", min_pairs=5, n_resamples=resamples
    ).to_json()
    meta = {"run_id": "bench", "suite": "bench", "arms": ["baseline", "optimizer"]}
    return build_report_json(meta, analysis, None, build_headline(analysis, None))


def _render(payload: dict[str, Any], full_cohorts: int) -> tuple[float, float]:
    saved = report_html.FULL_COHORTS
    report_html.FULL_COHORTS = full_cohorts  # type: ignore[misc]
    try:
        started = time.perf_counter()
        html = report_html.render_report_html(payload)
        took = time.perf_counter() - started
    finally:
        report_html.FULL_COHORTS = saved  # type: ignore[misc]
    return len(html.encode("utf-8")) / 1e6, took


def run(n_cohorts: int = 10_000) -> list[Result]:
    payload = report_payload(n_cohorts)
    full_mb, full_s = _render(payload, n_cohorts + 1)
    shipped_mb, shipped_s = _render(payload, report_html.FULL_COHORTS)
    return [
        Result(
            f"report.html, {n_cohorts:,} cohorts, every cohort drawn (before issue 28; "
            f"rendered in {full_s:.1f} s)",
            full_mb,
            "MB",
            "info",
            True,
        ),
        Result(
            f"report.html, {n_cohorts:,} cohorts, {report_html.FULL_COHORTS} drawn + one line "
            f"each (rendered in {shipped_s:.1f} s)",
            shipped_mb,
            "MB",
            f"<= {TARGET_MB:g} MB",
            shipped_mb <= TARGET_MB,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cohorts", type=int, default=10_000)
    args = parser.parse_args()
    for r in run(args.cohorts):
        verdict = "PASS" if r.passed else "MISS"
        print(f"{r.name}: {r.figure:,.3g} {r.unit} (target {r.target}) {verdict}")


if __name__ == "__main__":
    main()
