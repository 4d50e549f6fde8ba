"""The seeded usage model: what one episode consumes, split into API calls.

Per task a base mean (prompt length times a per-task factor seeded by
(seed, task id)); per episode multiplicative lognormal noise with mean 1 and the
arm's multiplicative effects; the episode totals are then split exactly into
integer per-call usage. The drawn numbers are format-agnostic: each format
writer maps them onto its own fields (and says which dimensions it lacks).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from pairlab_simclient.config import arm_spec
from pairlab_simclient.episode_env import EpisodeEnv, seeded_random

MIN_OUTPUT_PER_CALL = 8  # room for streamed placeholder output counts below the real one


@dataclass(frozen=True)
class CallUsage:
    uncached_input: int
    cache_read: int
    cache_write_5m: int
    cache_write_1h: int
    output: int  # includes reasoning
    reasoning: int


@dataclass(frozen=True)
class EpisodeDraw:
    arm: str
    calls: list[CallUsage]
    solved: bool
    task_factor: float
    means: dict[str, float] = field(default_factory=dict)

    def total(self, dim: str) -> int:
        return sum(getattr(c, dim) for c in self.calls)


def _lognormal_unit(rng: random.Random, sigma: float) -> float:
    """A lognormal factor with mean exactly 1."""
    if sigma <= 0:
        return 1.0
    return math.exp(rng.gauss(-sigma * sigma / 2.0, sigma))


def split_exact(total: int, weights: list[float], minimum: int = 0) -> list[int]:
    """Split ``total`` into len(weights) non-negative ints that sum to ``total``."""
    n = len(weights)
    floor_total = minimum * n
    if total < floor_total:
        raise ValueError("total below the per-part minimum")
    rest = total - floor_total
    wsum = sum(weights) or 1.0
    raw = [rest * w / wsum for w in weights]
    parts = [math.floor(r) for r in raw]
    remainder = rest - sum(parts)
    order = sorted(range(n), key=lambda i: (raw[i] - parts[i], -i), reverse=True)
    for i in order[:remainder]:
        parts[i] += 1
    return [p + minimum for p in parts]


def task_factor(env: EpisodeEnv, sigma: float) -> float:
    return _lognormal_unit(seeded_random(env.seed, "task", env.task_id), sigma)


def draw_episode(env: EpisodeEnv, prompt: str, config: dict[str, Any]) -> EpisodeDraw:
    rng = env.rng("usage")
    spec = arm_spec(config, env.arm)
    base = config["base"]
    noise = config["noise"]
    effects = {dim: float(v) for dim, v in spec.get("effects", {}).items()}
    factor = task_factor(env, float(base["task_factor_sigma"]))
    base_input = (
        float(base["input_fixed"]) + float(base["input_per_prompt_char"]) * len(prompt)
    ) * factor
    means = {
        "uncached_input": base_input,
        "cache_read": base_input * float(base["cache_read_ratio"]),
        "cache_write_5m": base_input * float(base["cache_write_5m_ratio"]),
        "cache_write_1h": base_input * float(base["cache_write_1h_ratio"]),
        "output": base_input * float(base["output_ratio"]),
    }
    means = {dim: m * effects.get(dim, 1.0) for dim, m in means.items()}
    episode_noise = _lognormal_unit(rng, float(noise["episode_sigma"]))
    totals = {
        dim: round(m * episode_noise * _lognormal_unit(rng, float(noise["dimension_sigma"])))
        for dim, m in means.items()
    }
    n_calls = rng.randint(int(config["api_calls"]["min"]), int(config["api_calls"]["max"]))
    totals["output"] = max(totals["output"], MIN_OUTPUT_PER_CALL * n_calls)
    share = float(base["reasoning_share"]) * rng.uniform(0.8, 1.2)
    reasoning_total = min(totals["output"], round(totals["output"] * share))

    # Context grows call by call: cache reads weigh later calls more.
    growing = [(i + 1) * rng.uniform(0.7, 1.3) for i in range(n_calls)]
    flat = [rng.uniform(0.5, 1.5) for _ in range(n_calls)]
    writes = [rng.uniform(0.2, 1.8) for _ in range(n_calls)]
    uncached = split_exact(totals["uncached_input"], flat)
    cache_read = split_exact(totals["cache_read"], growing)
    cw5 = split_exact(totals["cache_write_5m"], writes)
    cw1 = split_exact(totals["cache_write_1h"], writes)
    output = split_exact(
        totals["output"], [rng.uniform(0.5, 1.5) for _ in range(n_calls)], MIN_OUTPUT_PER_CALL
    )
    reasoning = _split_bounded(reasoning_total, output)
    calls = [
        CallUsage(uncached[i], cache_read[i], cw5[i], cw1[i], output[i], reasoning[i])
        for i in range(n_calls)
    ]
    solved = rng.random() < float(spec.get("solve_p", 0.9))
    return EpisodeDraw(arm=env.arm, calls=calls, solved=solved, task_factor=factor, means=means)


def _split_bounded(total: int, caps: list[int]) -> list[int]:
    """Split ``total`` proportionally to ``caps`` with part i <= caps[i] (total <= sum(caps))."""
    cap_sum = sum(caps)
    parts = [total * c // cap_sum for c in caps] if cap_sum else [0] * len(caps)
    remainder = total - sum(parts)
    for i in range(len(caps)):
        if remainder == 0:
            break
        room = min(caps[i] - parts[i], remainder)
        parts[i] += room
        remainder -= room
    return parts
