"""Forest plot of one metric's effect intervals per cohort (PNG, matplotlib Agg backend):
``forest.png``, for viewers that show an image (the HTML report has every metric)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PLOTTED_METRIC = "totalTokens"


def write_forest_plot(
    analysis: dict[str, Any], path: Path, *, title: str, metric: str = PLOTTED_METRIC
) -> Path:
    rows = []
    for cohort in analysis.get("cohorts", []):
        task = cohort.get("key", {}).get("taskId")
        for e in cohort.get("effects", []):
            if e.get("metric") != metric or e.get("estimate") is None:
                continue
            rows.append(
                (
                    f"{task}: {e['treatment']} vs {e['control']}",
                    e["estimate"],
                    e.get("ciLow"),
                    e.get("ciHigh"),
                    bool(e.get("win")),
                )
            )
    # imported here, not at module level: matplotlib costs every process that imports the
    # run's outputs (each flow run, each CLI call) about a second, and only a finished run draws
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    height = max(2.5, 0.32 * len(rows) + 1.2)
    fig, ax = plt.subplots(figsize=(9, height))
    if not rows:
        ax.text(
            0.5, 0.5, "no cohort passed the gate: no intervals to plot", ha="center", va="center"
        )
        ax.set_axis_off()
    else:
        for i, (_label, est, lo, hi, win) in enumerate(rows):
            color = "tab:green" if win else "tab:gray"
            if lo is not None and hi is not None:
                ax.hlines(i, lo, hi, color=color, linewidth=2)
            ax.plot(est, i, "o", color=color)
        ax.axvline(0, color="black", linewidth=0.8, linestyle="--")
        ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(f"paired effect on {metric} (treatment − control), 95% bootstrap CI")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
