"""Claim 4's predeclared ``warm`` stratum (issue 18): plan and analysis (pure).

A warm-stratum eval plans two strata together: **cold** (every episode starts from
the task's own catalog graph, as always) and **warm** (retrieval/full arms also get
the graph a harvest session wrote, carried frozen and hashed). The strata have their
own pairs (``<run>:<task>:<rep>`` and ``<run>:warm:<task>:<rep>``), the same Williams
order and the same emulator script draws per repetition, and every record names its
stratum: cohorts (pairlab.core.analysis.metrics.KEY_COLUMNS) include the stratum, so cold
and warm are analysed and reported separately and never pooled.

:func:`warm_effects` is the claim-4 section: per cohort (stratum included), the mean
paired difference of the retrieval arm against its pair's optimizer episode, with a
deterministic percentile-bootstrap 95 % interval.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from pairlab.core.schedule import Schedule, plan_schedule
from pairlab.core.schemas.episode import EpisodeRecord, make_episode_id, make_pair_id
from pairlab.core.stats.seeds import make_rng

COLD: Final = "cold"
WARM: Final = "warm"
HARVEST: Final = "harvest"
METRICS: Final = ("apiCalls", "totalTokens", "correct")
RESAMPLES: Final = 4000


def plan_warm_schedule(
    task_ids: Sequence[str], arms: Sequence[str], repetitions: int, seed: int, run_id: str
) -> Schedule:
    """Cold and warm strata planned together (cold pairs first, then warm)."""
    cold = plan_schedule(task_ids, arms, repetitions, seed, run_id)
    warm = []
    for e in cold.entries:  # the same Williams order; its own pair
        pair_id = make_pair_id(f"{run_id}:{WARM}", e.task_id, e.repetition)
        warm.append(
            e.model_copy(
                update={
                    "stratum": WARM,
                    "pair_id": pair_id,
                    "episode_id": make_episode_id(pair_id, e.arm),
                }
            )
        )
    entries = [*(e.model_copy(update={"stratum": COLD}) for e in cold.entries), *warm]
    return cold.model_copy(update={"entries": entries, "strata": [COLD, WARM]})


def _value(r: EpisodeRecord, metric: str) -> float | None:
    v = {"apiCalls": r.api_calls, "totalTokens": r.total_tokens, "correct": r.correct}[metric]
    return None if v is None else float(v)


def warm_effects(
    records: Sequence[EpisodeRecord], treated: str = "retrieval", control: str = "optimizer"
) -> dict[str, Any] | None:
    """Per (client, version, model, task, stratum): treated − control, paired per pair."""
    kept = [r for r in records if not r.excluded and r.stratum in (COLD, WARM)]
    if not any(r.stratum == WARM for r in kept):
        return None
    pairs: dict[tuple[str, ...], dict[str, dict[str, EpisodeRecord]]] = defaultdict(dict)
    for r in kept:
        key: tuple[str, ...] = (
            r.client,
            r.client_version or "unknown",
            r.model or "unknown",
            r.task_id,
        )
        pairs[(*key, str(r.stratum))].setdefault(r.pair_id, {})[r.arm] = r
    cohorts = []
    for key, by_pair in sorted(pairs.items()):
        metrics: dict[str, Any] = {}
        for metric in METRICS:
            diffs = []
            for arms in by_pair.values():
                a, b = arms.get(treated), arms.get(control)
                va, vb = (_value(a, metric) if a else None), (_value(b, metric) if b else None)
                if va is not None and vb is not None:
                    diffs.append(va - vb)
            metrics[metric] = _mean_interval(diffs, [*key, metric])
        cohorts.append(
            {
                "key": dict(
                    zip(("client", "clientVersion", "model", "taskId", "stratum"), key, strict=True)
                ),
                "pairs": len(by_pair),
                "deliveredFindings": sorted(
                    {f for arms in by_pair.values() for r in arms.values() for f in r.finding_ids}
                ),
                "metrics": metrics,
            }
        )
    return {
        "contrast": f"{treated} - {control} (paired per pair)",
        "rule": "cold and warm strata are separate cohorts; never pooled",
        "cohorts": cohorts,
    }


def _mean_interval(diffs: list[float], names: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(diffs), "estimate": None, "low": None, "high": None}
    if len(diffs) < 2:
        return out
    data = np.asarray(diffs)
    rng = make_rng("pairlab.warm.v1", *names)
    means = data[rng.integers(0, data.size, size=(RESAMPLES, data.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    out.update(estimate=float(data.mean()), low=float(low), high=float(high))
    return out


def render_warm_markdown(section: Mapping[str, Any] | None) -> list[str]:
    if not section:
        return []
    lines = [
        "## Across sessions (claim 4): cold vs warm strata, reported separately",
        "",
        f"{section['contrast']}; {section['rule']}. Mean [95% bootstrap interval] (pairs).",
        "",
        "| task | stratum | delivered findings | apiCalls | totalTokens | correct |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for c in section["cohorts"]:
        cells = []
        for metric in METRICS:
            m = c["metrics"][metric]
            cells.append(
                "n/a"
                if m["estimate"] is None
                else f"{m['estimate']:+.2f} [{m['low']:+.2f}, {m['high']:+.2f}] ({m['n']})"
            )
        found = ", ".join(c["deliveredFindings"]) or "none"
        lines.append(
            f"| {c['key']['taskId']} | {c['key']['stratum']} | {found} | {' | '.join(cells)} |"
        )
    lines.append("")
    return lines
