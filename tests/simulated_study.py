"""Simulated evaluation studies with a known ground truth, as episode logs (JSON lines).

The instrument for the evidence-validity tests: episode records in the real schema
(``EpisodeRecord`` v2, camelCase) written as the lines ``pairlab aggregate`` and a
run's ``episodes.jsonl`` hold, so that they are analysed by exactly the code a run
uses. The usage model follows the simulated client's (containers/simclient
usage_draw): per task a base level, per episode one lognormal factor shared by every
token dimension and one per dimension (mean 1), arm effects multiplicative per
dimension; reasoning is part of output; latency grows with the tokens; tool calls
are Poisson; the API list price is a fixed price per token dimension; a small share
of latencies is lost (null). ``costUsd`` is null (no provider charge), as for the
subscription CLIs. Every draw is seeded by names (study, task, pair).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pairlab.core.stats.seeds import make_rng

ARMS = ("baseline", "optimizer", "retrieval", "full")
DIMENSIONS = ("uncached", "cached", "cw5", "cw1", "output")
SHARES = {"uncached": 0.25, "cached": 0.55, "cw5": 0.05, "cw1": 0.03, "output": 0.12}
PRICE_PER_TOKEN = {"uncached": 3e-6, "cached": 0.3e-6, "cw5": 3.75e-6, "cw1": 6e-6, "output": 15e-6}


@dataclass(frozen=True)
class CohortTruth:
    """One task's ground truth: level, noise, and each arm's multiplicative effects."""

    task: str
    level: float = 20_000.0
    episode_sigma: float = 0.15
    dimension_sigma: float = 0.2
    effects: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # arm -> dim -> factor
    correct_p: float = 1.0
    latency_null_p: float = 0.01

    def factor(self, arm: str, dim: str) -> float:
        return float(self.effects.get(arm, {}).get(dim, 1.0))


def _unit_lognormal(
    rng: np.random.Generator, sigma: float, size: int | tuple[int, ...]
) -> np.ndarray:
    return np.exp(rng.normal(-sigma * sigma / 2.0, sigma, size))


def episode_lines(
    study: str, truth: CohortTruth, pairs: int, arms: tuple[str, ...] = ARMS
) -> Iterator[str]:
    """``pairs`` pairs of ``truth``'s task, one JSON line per episode (arms in a pair in order)."""
    rng = make_rng("simulated-study", study, truth.task)
    n_arms = len(arms)
    shared = _unit_lognormal(rng, truth.episode_sigma, (pairs, n_arms))
    dims = {d: _unit_lognormal(rng, truth.dimension_sigma, (pairs, n_arms)) for d in DIMENSIONS}
    reasoning_share = rng.uniform(0.2, 0.4, (pairs, n_arms))
    latency_noise = _unit_lognormal(rng, 0.2, (pairs, n_arms))
    latency_lost = rng.random((pairs, n_arms)) < truth.latency_null_p
    correct = rng.random((pairs, n_arms)) < truth.correct_p
    for p in range(pairs):
        pair_id = f"{study}:{truth.task}:{p}"
        for a, arm in enumerate(arms):
            tokens = {
                d: int(  # noqa: RUF046 (numpy scalars: round() is not always an int)
                    round(
                        truth.level
                        * SHARES[d]
                        * truth.factor(arm, d)
                        * shared[p, a]
                        * dims[d][p, a]
                    )
                )
                for d in DIMENSIONS
            }
            total = sum(tokens.values())
            price = sum(tokens[d] * PRICE_PER_TOKEN[d] for d in DIMENSIONS)
            tool_calls = int(rng.poisson(max(total / 2_000.0, 0.5)))
            latency = None if latency_lost[p, a] else round(5.0 * total * latency_noise[p, a], 3)
            yield json.dumps(
                {
                    "schemaVersion": 2,
                    "episodeId": f"{pair_id}:{arm}",
                    "pairId": pair_id,
                    "arm": arm,
                    "runId": study,
                    "client": "sim",
                    "clientVersion": "1.0",
                    "model": "sim-model",
                    "modelVersion": "2025-01",
                    "taskId": truth.task,
                    "repetition": p,
                    "success": True,
                    "correct": bool(correct[p, a]),
                    "joinMethod": "exact",
                    "uncachedInputTokens": tokens["uncached"],
                    "cachedInputTokens": tokens["cached"],
                    "cacheWrite5mTokens": tokens["cw5"],
                    "cacheWrite1hTokens": tokens["cw1"],
                    "outputTokens": tokens["output"],
                    "reasoningTokens": int(math.floor(tokens["output"] * reasoning_share[p, a])),  # noqa: RUF046
                    "totalTokens": total,
                    "toolCalls": tool_calls,
                    "latencyMs": latency,
                    "apiListPriceUsd": round(price, 9),
                },
                separators=(",", ":"),
            )


def write_study(
    path: Path,
    study: str,
    truths: list[CohortTruth],
    pairs: int | Mapping[str, int],
    arms: tuple[str, ...] = ARMS,
) -> Path:
    """An episode log of every cohort of ``truths`` (``pairs`` per cohort, or per task)."""
    with path.open("w", encoding="utf-8") as handle:
        for truth in truths:
            n = pairs if isinstance(pairs, int) else pairs[truth.task]
            for line in episode_lines(study, truth, n, arms):
                handle.write(line + "\n")
    return path


def saving(factor: float) -> dict[str, float]:
    """The same multiplicative effect on every token dimension."""
    return {d: factor for d in DIMENSIONS}
