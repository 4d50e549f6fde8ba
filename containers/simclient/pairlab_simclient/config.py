"""The simulator's usage model configuration: documented defaults plus overrides.

Sources, later wins (deep merge): built-in defaults, the JSON file named by
``PAIRLAB_SIM_CONFIG``, inline JSON in ``PAIRLAB_SIM_EFFECTS``. An override whose
top-level keys are all arm names is read as ``{"arms": {...}}``. The format is
documented in containers/simclient/README.md.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

EFFECT_DIMENSIONS = ("uncached_input", "cache_read", "cache_write_5m", "cache_write_1h", "output")

DEFAULT_CONFIG: dict[str, Any] = {
    "schema_version": 1,
    "api_calls": {"min": 3, "max": 8},
    "base": {
        # mean uncached input of a task = (input_fixed + input_per_prompt_char * len(prompt)) * task factor
        "input_fixed": 1500,
        "input_per_prompt_char": 3.0,
        "task_factor_sigma": 0.3,
        # other dimensions as ratios of the uncached-input mean
        "cache_read_ratio": 6.0,
        "cache_write_5m_ratio": 1.0,
        "cache_write_1h_ratio": 0.2,
        "output_ratio": 0.3,
        "reasoning_share": 0.4,  # part of output (never added)
    },
    # multiplicative lognormal noise with mean 1: an episode-wide factor and one per dimension
    "noise": {"episode_sigma": 0.15, "dimension_sigma": 0.2},
    "arms": {
        "baseline": {"effects": {}, "solve_p": 0.9},
        "optimizer": {"effects": {"uncached_input": 0.85}, "solve_p": 0.9},
        "retrieval": {"effects": {"uncached_input": 0.75, "cache_read": 1.1}, "solve_p": 0.9},
        "full": {
            "effects": {"uncached_input": 0.7, "cache_read": 1.15, "output": 0.9},
            "solve_p": 0.9,
        },
        "candidate": {"effects": {}, "solve_p": 0.9},
    },
    "treated_arms": ["optimizer", "retrieval", "full"],
    "quota": {
        "five_hour_budget_tokens": 2_000_000,
        "seven_day_budget_tokens": 20_000_000,
        # quota.json states precision 1 (whole percents); false: it states null (unknown)
        "report_precision": True,
        # with probability p an episode's windows named here reset half-way through its calls
        "mid_episode_reset": {"p": 0.0, "windows": ["five-hour"]},
    },
    "ledger": {"retry_p": 0.35},
    # wall time the agent "works": billed tokens drawn x this, slept before exiting
    # (so an arm that draws fewer tokens also finishes sooner, as a real agent would)
    "latency": {"ms_per_1k_tokens": 5.0},
}


class ConfigError(ValueError):
    """The configuration cannot be read or is malformed."""


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _as_override(data: object, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a JSON object")
    arms = set(DEFAULT_CONFIG["arms"])
    if data and all(k in arms for k in data):
        return {"arms": data}
    misplaced = sorted(k for k in data if k in arms)
    if misplaced:
        raise ConfigError(
            f'{where}: arm settings {misplaced} go under "arms" when other settings are given'
        )
    unknown = sorted(k for k in data if k not in DEFAULT_CONFIG)
    if unknown:
        raise ConfigError(
            f"{where}: unknown settings {unknown} (known: {', '.join(DEFAULT_CONFIG)})"
        )
    return data


def load_config(environ: dict[str, str]) -> dict[str, Any]:
    config = copy.deepcopy(DEFAULT_CONFIG)
    path = environ.get("PAIRLAB_SIM_CONFIG")
    if path:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"PAIRLAB_SIM_CONFIG={path}: {exc}") from exc
        config = _merge(config, _as_override(data, "PAIRLAB_SIM_CONFIG"))
    inline = environ.get("PAIRLAB_SIM_EFFECTS")
    if inline:
        try:
            data = json.loads(inline)
        except ValueError as exc:
            raise ConfigError(f"PAIRLAB_SIM_EFFECTS: {exc}") from exc
        config = _merge(config, _as_override(data, "PAIRLAB_SIM_EFFECTS"))
    _check(config)
    return config


QUOTA_WINDOWS = ("five-hour", "seven-day")


def _check_quota(quota: dict[str, Any]) -> None:
    if not isinstance(quota.get("report_precision", True), bool):
        raise ConfigError("quota.report_precision must be true or false")
    reset = quota.get("mid_episode_reset", {})
    if not isinstance(reset, dict) or not 0.0 <= float(reset.get("p", 0.0)) <= 1.0:
        raise ConfigError("quota.mid_episode_reset.p must be in [0, 1]")
    unknown = [w for w in reset.get("windows", []) if w not in QUOTA_WINDOWS]
    if unknown:
        raise ConfigError(
            f"quota.mid_episode_reset.windows: unknown {unknown} (known: {', '.join(QUOTA_WINDOWS)})"
        )


def _check(config: dict[str, Any]) -> None:
    calls = config["api_calls"]
    if not (1 <= int(calls["min"]) <= int(calls["max"])):
        raise ConfigError("api_calls: need 1 <= min <= max")
    _check_quota(config["quota"])
    for arm, spec in config["arms"].items():
        p = float(spec.get("solve_p", 0.9))
        if not 0.0 <= p <= 1.0:
            raise ConfigError(f"arms.{arm}.solve_p must be in [0, 1]")
        if float(spec.get("quota_factor", 1.0)) < 0:
            raise ConfigError(f"arms.{arm}.quota_factor must be >= 0")
        for dim, factor in spec.get("effects", {}).items():
            if dim not in EFFECT_DIMENSIONS:
                raise ConfigError(
                    f"arms.{arm}.effects: unknown dimension '{dim}' (known: {', '.join(EFFECT_DIMENSIONS)})"
                )
            if float(factor) < 0:
                raise ConfigError(f"arms.{arm}.effects.{dim} must be >= 0")


def arm_spec(config: dict[str, Any], arm: str) -> dict[str, Any]:
    try:
        spec: dict[str, Any] = config["arms"][arm]
    except KeyError:
        known = ", ".join(sorted(config["arms"]))
        raise ConfigError(f"unknown arm '{arm}' (configured: {known})") from None
    return spec
