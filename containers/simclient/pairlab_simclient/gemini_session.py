"""Gemini CLI output: ``--output-format json`` on stdout plus a chat session file.

stdout: ``{session_id, response, stats: {models: {<model>: {api, tokens, roles}}, tools, files}}``
with ``tokens{input, prompt, candidates, total, cached, thoughts, tool}`` (``prompt``
includes ``cached``; ``roles`` is a breakdown, not extra usage). The session file
``$GEMINI_CLI_HOME/.gemini/tmp/<sha256 of cwd>/chats/session-<ts>-<id8>.json`` holds
one ``gemini`` message per API call with ``tokens{input (= prompt, includes cached),
output (= candidates), cached, thoughts, tool, total}``. Normalised:
uncached = prompt - cached + tool, output = candidates + thoughts.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from pairlab_simclient.episode_env import EpisodeEnv, format_ts, random_uuid
from pairlab_simclient.format_result import FILLER, Clock, FormatResult, total_vector
from pairlab_simclient.usage_draw import CallUsage, EpisodeDraw

DEFAULT_MODEL = "gemini-2.5-pro"
PRESENT = ("uncached_input", "cache_read", "output", "reasoning")


def project_hash(cwd: str) -> str:
    return hashlib.sha256(cwd.encode("utf-8")).hexdigest()


def _call_tokens(call: CallUsage, tool: int) -> dict[str, int]:
    """One API call's tokens as Gemini splits them (``prompt`` includes ``cached``)."""
    tokens = {
        "prompt": call.cache_read + call.uncached_input - tool,
        "candidates": call.output - call.reasoning,
        "cached": call.cache_read,
        "thoughts": call.reasoning,
        "tool": tool,
    }
    tokens["total"] = tokens["prompt"] + tokens["candidates"] + tokens["thoughts"] + tokens["tool"]
    return tokens


def _gemini_message(
    rng: random.Random,
    clock: Clock,
    call: CallUsage,
    tokens: dict[str, int],
    model: str,
    final_text: str | None,
) -> dict[str, Any]:
    """The session file's message for one API call (``final_text`` None: a tool call)."""
    message: dict[str, Any] = {
        "id": random_uuid(rng),
        "timestamp": format_ts(clock.tick()),
        "type": "gemini",
        "content": final_text if final_text is not None else rng.choice(FILLER),
        "thoughts": [
            {
                "subject": "Plan",
                "description": rng.choice(FILLER),
                "timestamp": format_ts(clock.now),
            }
        ]
        if call.reasoning
        else [],
        "tokens": {
            "input": tokens["prompt"],
            "output": tokens["candidates"],
            "cached": tokens["cached"],
            "thoughts": tokens["thoughts"],
            "tool": tokens["tool"],
            "total": tokens["total"],
        },
        "model": model,
    }
    if final_text is None:
        message["toolCalls"] = [
            {
                "id": f"run_shell_command-{random_uuid(rng)}",
                "name": "run_shell_command",
                "args": {"command": "python3 -m unittest -q"},
                "status": "success",
                "timestamp": format_ts(clock.now),
            }
        ]
    return message


def _tool_stats(tool_calls: int) -> dict[str, Any]:
    by_name = {
        "run_shell_command": {
            "count": tool_calls,
            "success": tool_calls,
            "fail": 0,
            "durationMs": tool_calls * 1200,
        }
    }
    return {
        "totalCalls": tool_calls,
        "totalSuccess": tool_calls,
        "totalFail": 0,
        "totalDurationMs": tool_calls * 1200,
        "totalDecisions": {"accept": 0, "reject": 0, "modify": 0, "auto_accept": tool_calls},
        "byName": by_name if tool_calls else {},
    }


def _stdout_json(
    session_id: str,
    final_text: str,
    model: str,
    sums: dict[str, int],
    api: dict[str, int],
    tool_calls: int,
) -> dict[str, Any]:
    """What ``--output-format json`` prints: the answer and the session's stats."""
    token_stats = {"input": sums["prompt"] - sums["cached"], **sums}
    return {
        "session_id": session_id,
        "response": final_text,
        "stats": {
            "models": {
                model: {
                    "api": api,
                    "tokens": token_stats,
                    "roles": {"main": {**api, "tokens": dict(token_stats)}},
                }
            },
            "tools": _tool_stats(tool_calls),
            "files": {"totalLinesAdded": 0, "totalLinesRemoved": 0},
        },
    }


def write_gemini(
    env: EpisodeEnv, draw: EpisodeDraw, prompt: str, model: str | None, final_text: str
) -> FormatResult:
    rng = env.rng("gemini-records")
    model = model or DEFAULT_MODEL
    session_id = random_uuid(rng)
    clock = Clock(env.started_at, rng)
    messages: list[dict[str, Any]] = [
        {
            "id": random_uuid(rng),
            "timestamp": format_ts(env.started_at),
            "type": "user",
            "content": prompt,
        }
    ]
    sums = {"prompt": 0, "candidates": 0, "cached": 0, "thoughts": 0, "tool": 0, "total": 0}
    latency_ms = 0
    for i, call in enumerate(draw.calls):
        is_last = i == len(draw.calls) - 1
        tokens = _call_tokens(call, int(call.uncached_input * rng.uniform(0.0, 0.15)) if i else 0)
        for key, value in tokens.items():
            sums[key] += value
        latency_ms += rng.randint(800, 9000)
        text = final_text if is_last else None
        messages.append(_gemini_message(rng, clock, call, tokens, model, text))

    api = {"totalRequests": len(draw.calls), "totalErrors": 0, "totalLatencyMs": latency_ms}
    tool_calls = max(len(draw.calls) - 1, 0)  # every call but the last runs a tool
    output = _stdout_json(session_id, final_text, model, sums, api, tool_calls)
    start = env.started_at
    chats = env.gemini_home / ".gemini" / "tmp" / project_hash(str(env.workspace)) / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / f"session-{start:%Y-%m-%dT%H-%M}-{session_id[:8]}.json"
    session = {
        "sessionId": session_id,
        "projectHash": project_hash(str(env.workspace)),
        "startTime": format_ts(start),
        "lastUpdated": format_ts(clock.now),
        "messages": messages,
    }
    path.write_text(json.dumps(session, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return FormatResult(
        session_id=session_id,
        model=model,
        vector=total_vector(draw.calls, PRESENT),
        api_calls=len(draw.calls),
        record_paths=[path],
        stdout=json.dumps(output, indent=2, ensure_ascii=False) + "\n",
    )
