"""Codex CLI rollouts: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl``.

Lines are ``{timestamp, type, payload}``: ``session_meta``, ``turn_context``,
``response_item`` and ``event_msg``. ``token_count`` events carry a CUMULATIVE
``total_token_usage`` (``input_tokens`` includes cached input, ``output_tokens``
includes reasoning), the call's ``last_token_usage``, and ``rate_limits`` from the
simulated quota; the first has ``info: null`` and at least one snapshot is
re-emitted unchanged (CLIENTS.md: never count it twice). This Codex version
reports no cache writes: those dimensions are null in the truth.
"""

from __future__ import annotations

import json
import random
from typing import Any

from pairlab_simclient.episode_env import EpisodeEnv, format_ts, random_token, random_uuid
from pairlab_simclient.format_result import FILLER, Clock, FormatResult, total_vector, write_jsonl
from pairlab_simclient.quota import QuotaCharge, codex_rate_limits
from pairlab_simclient.usage_draw import CallUsage, EpisodeDraw

CODEX_VERSION = "0.46.0"
DEFAULT_MODEL = "gpt-5.6-terra"
CONTEXT_WINDOW = 272000
PRESENT = ("uncached_input", "cache_read", "output", "reasoning")


def _token_usage(calls: list[CallUsage]) -> dict[str, int]:
    inp = sum(c.uncached_input + c.cache_read for c in calls)
    out = sum(c.output for c in calls)
    return {
        "input_tokens": inp,
        "cached_input_tokens": sum(c.cache_read for c in calls),
        "output_tokens": out,
        "reasoning_output_tokens": sum(c.reasoning for c in calls),
        "total_tokens": inp + out,
    }


class _Rollout:
    """The rollout's lines, each stamped by the episode's seeded clock."""

    def __init__(self, clock: Clock, quota: QuotaCharge | None) -> None:
        self.clock, self.quota = clock, quota
        self.lines: list[dict[str, Any]] = []

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        stamp = format_ts(self.clock.tick(0.01, 0.5))
        self.lines.append({"timestamp": stamp, "type": kind, "payload": payload})

    def rate_limits(self, step: int | None) -> dict[str, Any] | None:
        """The simulated quota before the episode (None) or after the ``step``-th call."""
        if self.quota is None:
            return None
        return codex_rate_limits(self.quota.before if step is None else self.quota.steps[step])


def _emit_opening(out: _Rollout, env: EpisodeEnv, session_id: str, model: str, prompt: str) -> None:
    """Session meta, the environment context, the turn context and the user's prompt."""
    cwd = str(env.workspace)
    out.emit(
        "session_meta",
        {
            "id": session_id,
            "timestamp": format_ts(env.started_at),
            "cwd": cwd,
            "originator": "codex_exec",
            "cli_version": CODEX_VERSION,
            "instructions": None,
            "source": "exec",
            "model_provider": "openai",
            "git": None,
        },
    )
    context = f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"
    out.emit(
        "response_item",
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": context}]},
    )
    out.emit(
        "turn_context",
        {
            "cwd": cwd,
            "approval_policy": "never",
            "sandbox_policy": {"mode": "workspace-write"},
            "model": model,
            "effort": "medium",
            "summary": "auto",
        },
    )
    out.emit(
        "response_item",
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]},
    )
    out.emit("event_msg", {"type": "user_message", "message": prompt, "kind": "plain"})
    out.emit(
        "event_msg", {"type": "token_count", "info": None, "rate_limits": out.rate_limits(None)}
    )


def _emit_call(
    out: _Rollout, rng: random.Random, calls: list[CallUsage], i: int, final_text: str, reemit: bool
) -> None:
    """The ``i``-th API call: its reasoning, a shell call (the last one: the final message),
    the token-count snapshot (``reemit``: twice) and the call's output."""
    call, is_last = calls[i], i == len(calls) - 1
    if call.reasoning > 0:
        out.emit(
            "response_item",
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": rng.choice(FILLER)}],
                "content": None,
                "encrypted_content": random_token(rng, 64),
            },
        )
    call_id = "call_" + random_token(rng, 24)
    if is_last:
        content = [{"type": "output_text", "text": final_text}]
        out.emit("response_item", {"type": "message", "role": "assistant", "content": content})
    else:
        command = json.dumps({"command": ["bash", "-lc", "python3 -m unittest -q"]})
        out.emit(
            "response_item",
            {"type": "function_call", "name": "shell", "call_id": call_id, "arguments": command},
        )
    info = {
        "total_token_usage": _token_usage(calls[: i + 1]),
        "last_token_usage": _token_usage([call]),
        "model_context_window": CONTEXT_WINDOW,
    }
    snapshot = {"type": "token_count", "info": info, "rate_limits": out.rate_limits(i)}
    out.emit("event_msg", snapshot)
    if reemit:  # re-emitted, unchanged cumulative total
        out.emit("event_msg", json.loads(json.dumps(snapshot)))
    if not is_last:
        duration = round(rng.uniform(0.1, 3), 1)
        output = json.dumps(
            {"output": "ok\n", "metadata": {"exit_code": 0, "duration_seconds": duration}}
        )
        out.emit(
            "response_item", {"type": "function_call_output", "call_id": call_id, "output": output}
        )


def write_codex(
    env: EpisodeEnv,
    draw: EpisodeDraw,
    prompt: str,
    model: str | None,
    final_text: str,
    quota: QuotaCharge | None,
) -> FormatResult:
    rng = env.rng("codex-records")
    model = model or DEFAULT_MODEL
    session_id = random_uuid(rng)
    out = _Rollout(Clock(env.started_at, rng), quota)
    _emit_opening(out, env, session_id, model, prompt)
    reemit_after = rng.randrange(len(draw.calls))
    for i in range(len(draw.calls)):
        _emit_call(out, rng, draw.calls, i, final_text, reemit=i == reemit_after)
    out.emit("event_msg", {"type": "agent_message", "message": final_text})
    out.emit("event_msg", {"type": "task_complete", "last_agent_message": final_text})

    start = env.started_at
    day_dir = env.codex_home / "sessions" / f"{start:%Y}" / f"{start:%m}" / f"{start:%d}"
    path = day_dir / f"rollout-{start:%Y-%m-%dT%H-%M-%S}-{session_id}.jsonl"
    write_jsonl(path, out.lines)
    return FormatResult(
        session_id=session_id,
        model=model,
        vector=total_vector(draw.calls, PRESENT),
        api_calls=len(draw.calls),
        record_paths=[path],
        stdout=final_text + "\n",
    )
